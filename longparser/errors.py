"""Errors the engine raises for a request it cannot serve as asked."""

from __future__ import annotations


class RequestRefused(ValueError):
    """The request asks for something these resources cannot provide (for example the model's
    token counter on a process without the tokenizer files); the message says what to install.

    Raised before any chunking work. It is the request's problem, not a transient one: a task
    fails once with it and is never retried.
    """
