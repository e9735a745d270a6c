"""``python -m tf1compat_init``: the ``tf1compat-init`` command line."""

import sys

from .cli import main

sys.exit(main())
