"""Errors the engine raises for a request it cannot serve as asked (defined in the wire contract,
:mod:`schemas.errors`, so that the task and the producer client name the same class)."""

from __future__ import annotations

from schemas.errors import RequestRefused

__all__ = ["RequestRefused"]
