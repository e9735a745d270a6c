# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``python -m tf1compat_init``: the ``tf1compat-init`` command line."""

import sys

from .cli import main

sys.exit(main())
