"""Evaluation and benchmarks: how well the engine chunks, scored on the labelled sets of ``eval/``.

Run from a source checkout (``python -m lpeval COMMAND``, :mod:`lpeval.main`); ``pip install .``
does not ship this package, so workers and producers never carry it. It is the top layer: it
drives the engine, the loaders and the command line's input readers; nothing shipped imports it
(a contract in pyproject.toml).
"""
