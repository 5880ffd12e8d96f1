"""``python -m etrt.pte``: see :mod:`etrt.pte.command`."""

import sys

from .command import main

if __name__ == "__main__":
    sys.exit(main())
