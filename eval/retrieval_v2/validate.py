#!/usr/bin/env python3
"""Checks retrieval_v2 by retrieval_v1's validator (one protocol, one validator; see README.md).

    .venv/bin/python eval/retrieval_v2/validate.py [QUESTIONS_FILE]
"""

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.argv[1:1] = ["--set", str(HERE)]
runpy.run_path(str(HERE.parent / "retrieval_v1" / "validate.py"), run_name="__main__")
