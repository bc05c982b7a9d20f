"""Celery tasks (:mod:`tasks.chunk`) and the producer-side client (:mod:`tasks.client`).

This package file imports nothing, so ``import tasks.client`` never pulls in the worker's
engine resources or torch.
"""
