"""The service layer shared by producers and workers: Redis key formats, the result store and
the Celery configuration. Built on ``config`` (settings) and ``schemas``; imports neither the
Celery app nor the engine.
"""
