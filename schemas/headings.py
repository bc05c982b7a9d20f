"""The service's name for :mod:`longparser_client.schemas.headings`.

The same module object, so old imports and monkeypatching through this name reach the real one.
"""

import sys

from longparser_client.schemas import headings as _module

sys.modules[__name__] = _module
