"""What producers and workers share around Redis: key formats, the result store, the completion
stream, the payload store, the retry policy and the Celery configuration. Built on
:mod:`longparser_client.settings` and :mod:`longparser_client.schemas`; imports neither the
Celery app nor the engine.
"""
