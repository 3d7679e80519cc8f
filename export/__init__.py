"""The export stage: a ``.keras`` model in, a validated ``.tflite`` out.

Installed as ``albert_keras.export``. ``export_tflite`` converts on the safe
path, runs the result in LiteRT against Keras and writes nothing that
disagrees; ``bench`` measures a ``.tflite``.
"""

from albert_keras.lazy import lazy_exports

# Loaded on first use (PEP 562): ``ExportConfig`` alone must not import
# TensorFlow, so that ``albert-keras export --help`` answers at once.
_EXPORTS = {
    "QUANTIZE_MODES": "albert_keras.export.export_config",
    "ExportConfig": "albert_keras.export.export_config",
    "ExportError": "albert_keras.export.converter",
    "export_tflite": "albert_keras.export.export_model",
    "ValidationError": "albert_keras.export.validation",
}
__getattr__, __all__ = lazy_exports(__name__, _EXPORTS)
