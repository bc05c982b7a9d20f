"""The service's name for :mod:`longparser_client.service`: Redis key formats, the result store,
the completion stream, the payload store and the Celery configuration (defined there, shared by
producers and workers). Each ``service.<module>`` is the same module object as
``longparser_client.service.<module>``.
"""
