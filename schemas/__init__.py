"""The service's name for :mod:`longparser_client.schemas`, the wire contract (defined there).

Each ``schemas.<module>`` is the same module object as ``longparser_client.schemas.<module>``;
upload services import ``longparser_client.schemas``, which cannot collide with a ``schemas``
package of their own.
"""

from longparser_client.schemas import *  # noqa: F403
from longparser_client.schemas import __all__  # noqa: F401
