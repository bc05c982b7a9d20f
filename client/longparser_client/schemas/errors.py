"""The one error a request can be refused with for what it asks, shared by every layer.

The engine raises it, the task stores it as the request's failure and the producer client
rebuilds it from the result backend (Celery's JSON backend stores the class's module and name
and rebuilds it from its one message argument), so it lives in the wire contract, which every
layer may import.
"""

from __future__ import annotations


class RequestRefused(ValueError):
    """The request asks for something these resources cannot provide (for example the model's
    token counter on a process without the tokenizer files, or a ``max_tokens`` that leaves no
    room for text); the message says what to install or change.

    It is the request's problem, not a transient one: a task fails once with it and is never
    retried.
    """
