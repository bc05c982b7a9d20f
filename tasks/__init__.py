"""The Celery task (:mod:`tasks.chunk`) and the service's names of the producer client.

``tasks.client``, ``tasks.aio``, ``tasks.errors`` and ``tasks.payload`` are the same module
objects as ``longparser_client.client``, ``.aio``, ``.errors`` and ``.payload`` (defined there;
upload services import ``longparser_client``). This package file imports nothing, so
``import tasks.client`` never pulls in the worker's engine resources or torch.
"""
