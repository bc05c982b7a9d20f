"""JSON decoding for the worker without kombu's per-object hook when nothing needs it.

kombu decodes every JSON message body with an ``object_hook`` called on each JSON object, to
revive the types it encodes as ``{"__type__": ..., "__value__": ...}`` (datetimes, UUIDs,
decimals, bytes). A chunking request holds a few hundred objects (blocks, provenance, config)
and none of those types, and Celery decodes each body twice (the worker parent for its
request, the pool child to run it): the hook was a measurable share of a small document's
cost in the worker. This decoder gives the same result for every message: when the text has no
``"__type__"`` key anywhere, the hook could not change anything and plain ``json.loads`` is
used; otherwise kombu's own decoder runs. Same content type, same wire format: producers and
older workers are unaffected.
"""

from __future__ import annotations

import json
from typing import Any

from kombu.serialization import registry
from kombu.utils import json as kombu_json

TYPE_MARKER = '"__type__"'


def loads(data: Any) -> Any:
    """kombu's JSON ``loads``, skipping its object hook when no value can need it."""
    if isinstance(data, memoryview | bytearray | bytes):
        data = bytes(data).decode("utf-8")
    if TYPE_MARKER in data:
        return kombu_json.loads(data)
    return json.loads(data)


def install() -> None:
    """Use :func:`loads` for ``application/json`` message bodies in this process."""
    registry.register("json", kombu_json.dumps, loads, content_type="application/json",
                      content_encoding="utf-8")
