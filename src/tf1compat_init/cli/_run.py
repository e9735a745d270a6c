# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``tf1compat-init run``: a script or module that uses ``tf.estimator``, unchanged.

    tf1compat-init run train.py --model_dir=run/          # as `python train.py ...`
    tf1compat-init run -m official.recommendation.ncf_keras_main --flag=...

It calls :func:`tf1compat_init.alias.install` (``tf.estimator`` and tensorflow-estimator's
import paths become this library's; nothing is imported before the script does), then runs
the script as ``__main__`` the way Python does: ``sys.argv`` is the script and its
arguments, untouched, ``sys.path[0]`` its directory (the current one for ``-m``). Its exit
code comes back unchanged; an uncaught exception prints the script's traceback (through
``sys.excepthook``, without the launcher's frames) and exits 1.
"""

from __future__ import annotations

import os
import runpy
import sys
from collections.abc import Sequence
from types import TracebackType

from ._common import PROG

HELP = "run a script (or -m module) with tf.estimator provided by tf1compat_init"
USAGE = f"""usage: {PROG} run SCRIPT [ARGS...]
       {PROG} run -m MODULE [ARGS...]

Runs SCRIPT (or MODULE) as __main__, as `python SCRIPT ARGS...` would, after
tf1compat_init.estimator.install(): tf.estimator, tf.compat.v1.estimator (with .tpu),
`import tensorflow_estimator` and its private module paths are tf1compat_init's.
ARGS go to the script untouched. The exit code is the script's.
"""


def _fail(message: str) -> int:
    sys.stderr.write(f"{PROG} run: error: {message}\n")
    return 2


def _own_frames(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` without the launcher's and runpy's frames at its top."""
    skip = {os.path.abspath(__file__), os.path.abspath(runpy.__file__)}
    while tb is not None and (
        os.path.abspath(tb.tb_frame.f_code.co_filename) in skip
        or tb.tb_frame.f_code.co_filename.startswith("<frozen ")
    ):
        tb = tb.tb_next
    return tb


def main(argv: Sequence[str]) -> int:
    """Runs ``tf1compat-init run ARGV``; returns the exit code."""
    argv = list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        (sys.stdout if argv else sys.stderr).write(USAGE)
        return 0 if argv else 2
    if argv[0] == "-m":
        if len(argv) < 2:
            return _fail("-m needs a module name")
        module, args = argv[1], argv[2:]
        import importlib.util

        sys.path[0] = os.getcwd()  # as `python -m`: the module is looked up from here
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError) as e:
            return _fail(f"no module named {module!r} ({e})")
        if spec is None:
            return _fail(f"no module named {module!r}")
        target = module
    else:
        path, args = argv[0], argv[1:]
        if not os.path.exists(path):
            return _fail(f"can't open file {path!r}: no such file")
        target = path

    from ..alias import install

    install()
    if argv[0] == "-m":
        sys.argv = [target, *args]  # runpy puts the module's file in sys.argv[0]
        runner = lambda: runpy.run_module(target, run_name="__main__", alter_sys=True)  # noqa: E731
    else:
        sys.argv = [target, *args]
        sys.path[0] = os.path.dirname(os.path.realpath(target))
        runner = lambda: runpy.run_path(target, run_name="__main__")  # noqa: E731
    try:
        runner()
    except SystemExit:
        raise
    except BaseException as e:
        tb = _own_frames(e.__traceback__)
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        return 130 if isinstance(e, KeyboardInterrupt) else 1
    return 0
