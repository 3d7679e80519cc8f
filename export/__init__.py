"""The export stage: a ``.keras`` model in, a validated ``.tflite`` out.

Installed as ``albert_keras.export``. ``export_tflite`` converts on the safe
path, runs the result in LiteRT against Keras and writes nothing that
disagrees; ``bench`` measures a ``.tflite``.
"""

from albert_keras.export.converter import QUANTIZE_MODES  # noqa: F401
from albert_keras.export.converter import ExportError  # noqa: F401
from albert_keras.export.export_config import ExportConfig  # noqa: F401
from albert_keras.export.export_model import export_tflite  # noqa: F401
from albert_keras.export.validation import ValidationError  # noqa: F401
