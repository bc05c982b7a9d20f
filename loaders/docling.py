"""The worker distribution's name for :mod:`longparser_client.converters.docling`.

The same module object, so old imports and monkeypatching through this name reach the real one.
"""

import sys

from longparser_client.converters import docling as _module

sys.modules[__name__] = _module
