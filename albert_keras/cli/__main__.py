"""``python -m albert_keras.cli``: the command (``albert_keras_cli`` starts faster)."""

import sys

from albert_keras.cli import main

sys.exit(main())
