"""The test suite's helpers: checkpoint writers, models, scenarios, cluster tasks.

Imported as ``from support import bundles`` (``tests/`` is on ``sys.path``: pytest puts it
there with ``tests/conftest.py``). Some modules also run as scripts, in subprocesses or by
hand (``python tests/support/canned_dnn.py --golden``); their golden files are in
``tests/golden/``.
"""

from pathlib import Path

#: This folder: scripts that tests start by path are ``SUPPORT / "<name>.py"``.
SUPPORT = Path(__file__).resolve().parent
