# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``tf1compat-init``: inspect, plan, diff and migrate TF1 and TF2 checkpoints.

A thin front door: it parses arguments, calls the library, and prints. One module per
command (``_inspect``, ``_plan``, ``_diff``, ``_migrate``), each with its help, its
arguments and its ``run``. ``inspect``, ``diff``, ``plan`` against a checkpoint, and
``migrate --format tf1|safetensors`` never import TensorFlow; model factories and the
``tf2`` / ``keras`` formats do, with TensorFlow's start-up log kept off the terminal.

Exit codes: 0 success, 1 failure, 2 usage error; ``diff`` follows diff(1): 0 identical,
1 different, 2 trouble. Every failure is one line on stderr (a traceback with ``--debug``).
"""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from collections.abc import Sequence

from . import _diff, _inspect, _migrate, _plan
from ._common import PROG, Parser, UsageError, one_line

__all__ = ["build_parser", "main"]

logger = logging.getLogger(__name__)

#: The commands, in the order ``--help`` lists them.
_COMMANDS = {"inspect": _inspect, "plan": _plan, "diff": _diff, "migrate": _migrate}


def _shared_parsers() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The options every command takes, and those of the commands that rename keys."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    common.add_argument("--quiet", "-q", action="store_true", help="print nothing on success")
    common.add_argument("--debug", action="store_true", help="tracebacks and TensorFlow's log")
    mapping = argparse.ArgumentParser(add_help=False)
    mapping.add_argument(
        "--map",
        action="append",
        metavar="OLD=NEW",
        help="rename keys under OLD to NEW (repeatable); OLD/NEW are scopes ending in '/' or keys",
    )
    mapping.add_argument(
        "--map-file",
        metavar="FILE",
        help='JSON file of OLD: NEW rules; NEW may carry transforms: "new | reshape(2, 3)"',
    )
    mapping.add_argument(
        "--recipe",
        metavar="NAME",
        help="a registered recipe (tf1compat_init.transforms) instead of --map/--map-file",
    )
    mapping.add_argument(
        "--exclude",
        action="append",
        metavar="REGEX",
        help="leave out keys whose name (old or new) matches (re.search; repeatable)",
    )
    return common, mapping


def build_parser() -> argparse.ArgumentParser:
    """The ``tf1compat-init`` argument parser."""
    common, mapping = _shared_parsers()
    parser = Parser(
        prog=PROG,
        description="Inspect, plan, diff and migrate TF1 (name-based) and TF2 (object-based) "
        "TensorFlow checkpoints.",
        epilog="Exit codes: 0 success, 1 failure, 2 usage error (diff: 0 same, 1 different, "
        "2 trouble). Run '%(prog)s COMMAND --help' for examples.",
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for name, command in _COMMANDS.items():
        p = sub.add_parser(
            name,
            parents=[common, mapping] if command.TAKES_MAP else [common],
            help=command.HELP,
            description=command.HELP[0].upper() + command.HELP[1:] + ".",
            epilog=command.EXAMPLES,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.add_arguments(p)
    # `run` is dispatched by main() before parsing; listed here for --help.
    sub.add_parser(
        "run",
        help="run a script (or -m module) with tf.estimator provided by "
        "tf1compat_init; see '%(prog)s run --help'",
        add_help=False,
    )
    return parser


def _setup_logging(args: argparse.Namespace) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{PROG}: %(levelname)s: %(message)s"))
    root = logging.getLogger("tf1compat_init")
    root.handlers[:] = [handler]
    root.propagate = False
    root.setLevel(logging.DEBUG if args.debug else logging.ERROR if args.quiet else logging.WARNING)
    if not args.debug:
        warnings.filterwarnings("ignore")  # library warnings of TF/Keras are not ours to show


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the CLI; returns the exit code.

    Example:
        >>> main(["inspect", "pretrained/", "--json"])  # doctest: +SKIP
        0
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"]:  # the script's arguments are its own: no parsing of ours
        from . import _run

        return _run.main(argv[1:])
    parser = build_parser()
    command = None
    try:
        args = parser.parse_args(argv)
        command = args.command
        _setup_logging(args)
        return _COMMANDS[command].run(args, sys.stdout)
    except UsageError as e:
        sys.stderr.write(f"{e}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return 130
    except _plan.PlanFailed as e:
        sys.stderr.write(f"{PROG} plan: error: {e}\n")
        return 1
    except Exception as e:
        debug = "--debug" in argv
        if debug:
            import traceback

            traceback.print_exc()
        name = f"{PROG} {command}" if command else PROG
        known = _is_expected(e)
        text = one_line(e) if known else f"internal error: {type(e).__name__}: {one_line(e)}"
        hint = "" if known or debug else " (run with --debug for the traceback)"
        sys.stderr.write(f"{name}: error: {text}{hint}\n")
        return 2 if command == "diff" else 1


def _is_expected(e: BaseException) -> bool:
    from ..errors import Tf1CompatError

    return isinstance(e, Tf1CompatError | OSError | ValueError | KeyError | ImportError)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
