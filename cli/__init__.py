"""Command lines: the ``longparser`` program and the ``make run`` demo.

The top layer: it wires the engine, the loaders, the settings and the producer client
together; nothing below imports it.
"""
