"""``python -m cli``: the ``longparser`` command line."""

import sys

from cli.main import main

sys.exit(main())
