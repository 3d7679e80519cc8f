"""The ``albert-keras`` console script (``python -m albert_keras_cli``).

It lives outside the ``albert_keras`` package on purpose: importing that
package loads Keras and registers every model class, as ``import keras_hub``
does. While this module is loading, the package leaves that to the command
(``albert_keras.cli.main`` calls ``albert_keras.load_all()`` once the flags are
parsed), so ``albert-keras --help`` answers without importing Keras or
TensorFlow.
"""

import sys

# Run as ``python -m albert_keras_cli`` this module is ``__main__``; the package
# looks for it under its own name.
sys.modules.setdefault("albert_keras_cli", sys.modules[__name__])

from albert_keras.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
