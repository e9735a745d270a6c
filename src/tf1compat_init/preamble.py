# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Old path of :mod:`tf1compat_init.engine.planning.preamble`.

Kept so that imports of the old path keep working.
The name stands for the engine module itself (one module object, not a copy), so
attributes set on either are seen by both.
"""

import sys

from .engine.planning import preamble as _module

sys.modules[__name__] = _module
