"""The service's name for :mod:`longparser_client.service.encoders`.

The same module object, so old imports and monkeypatching through this name reach the real one.
"""

import sys

from longparser_client.service import encoders as _module

sys.modules[__name__] = _module
