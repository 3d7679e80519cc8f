"""Smoke tests of the research scripts, run apart from the product's tests:

    python -m pytest docs/reports/code -q

They share the product tests' fixtures (tiny corpora, tokenizer, model folder).
"""

import importlib.util
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))))

from tests.conftest import classifier_folder  # noqa: E402,F401
from tests.conftest import corpus_file  # noqa: E402,F401
from tests.conftest import init_folder  # noqa: E402,F401
from tests.conftest import spm_path  # noqa: E402,F401
from tests.conftest import task_files  # noqa: E402,F401

_HERE = os.path.dirname(os.path.abspath(__file__))


def load_script(name):
    """The module of ``NAME.py`` in this folder, imported as a test would use it.

    The scripts import their sibling scripts as top-level names, so the folder
    is on ``sys.path`` while the module loads.
    """
    sys.path.insert(0, _HERE)
    try:
        spec = importlib.util.spec_from_file_location(f"{name}_script",
                                                      os.path.join(_HERE, f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(_HERE)
    return module
