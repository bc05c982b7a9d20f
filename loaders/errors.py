"""Errors of the loaders: a resource that was asked for and cannot be provided."""

from __future__ import annotations


class ResourceUnavailable(RuntimeError):
    """A resource cannot be loaded; the message says what is missing and what to install."""
