"""``python -m chatflow.handlers.cli``: the ``chatflow`` command."""

import sys

from .main import main

sys.exit(main())
