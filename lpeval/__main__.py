"""``python -m lpeval``: the evaluation and benchmark command line."""

import sys

from lpeval.main import main

sys.exit(main())
