"""``python -m albert_keras.cli``: the command in a new process (another backend)."""

import sys

from albert_keras.cli import main

sys.exit(main())
