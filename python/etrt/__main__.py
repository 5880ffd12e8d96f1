"""``python -m etrt``: the ``etrt`` command (inspect, validate, pack); see :mod:`etrt.cli`."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
