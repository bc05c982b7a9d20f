"""The service's name for :mod:`longparser_client.service.events`.

The same module object, so old imports and monkeypatching through this name reach the real one.
"""

import sys

from longparser_client.service import events as _module

sys.modules[__name__] = _module
