"""The public surface is deliberate: pinned here, so a change to it is a visible decision."""

import importlib

import pytest

import tf1compat_init

ENGINE = [
    "DEFAULT_OPTIONAL",
    "AssignmentMap",
    "AssignmentMapError",
    "CheckpointCorruptError",
    "CheckpointInfo",
    "CheckpointMismatchError",
    "CheckpointNotFoundError",
    "Mismatch",
    "PartialRestoreError",
    "RestorePlan",
    "RestoreReport",
    "TargetError",
    "Tf1CompatError",
    "UnsupportedCheckpointError",
    "VariableInfo",
    "open_checkpoint",
    "plan_restore",
]


def test_engine_all_is_pinned_and_sorted():
    assert tf1compat_init.__all__ == ENGINE
    assert tf1compat_init.__all__ == sorted(
        tf1compat_init.__all__, key=lambda s: (s != s.upper(), s)
    )
    for name in ENGINE:
        assert getattr(tf1compat_init, name) is not None


def test_errors_subclass_the_builtins_callers_catch():
    e = tf1compat_init
    assert issubclass(e.CheckpointNotFoundError, FileNotFoundError)
    for cls in (
        e.AssignmentMapError,
        e.CheckpointMismatchError,
        e.CheckpointCorruptError,
        e.TargetError,
    ):
        assert issubclass(cls, ValueError) and issubclass(cls, e.Tf1CompatError)
    # Not the input's fault: a RuntimeError, so `except ValueError` does not hide it.
    assert issubclass(e.PartialRestoreError, RuntimeError)
    assert issubclass(e.PartialRestoreError, e.Tf1CompatError)


@pytest.mark.parametrize(
    ("module", "names"),
    [
        (
            "tf1compat_init.v1",
            {
                "CheckpointInitHook",
                "init_from_checkpoint",
                "restore_saver",
                "scaffold_init_fn",
                "warm_start",
            },
        ),
        (
            "tf1compat_init.keras",
            {"CheckpointInit", "CheckpointSaver", "LoggingTensor", "StopAtStep", "load_checkpoint"},
        ),
        ("tf1compat_init.checkpoint", {"restore", "restore_or_initialize"}),
        (
            "tf1compat_init.transforms",
            {
                "Recipe",
                "cast",
                "concat",
                "fn",
                "get_recipe",
                "list_recipes",
                "register",
                "reshape",
                "split",
                "to",
                "transpose",
            },
        ),
        (
            "tf1compat_init.estimator",
            {"Estimator", "EstimatorSpec", "ModeKeys", "RunConfig", "WarmStartSettings"},
        ),
    ],
)
def test_front_ends_export_what_the_issues_name(module, names):
    pytest.importorskip("tensorflow")
    mod = importlib.import_module(module)
    assert names <= set(mod.__all__), names - set(mod.__all__)
    for name in mod.__all__:
        assert hasattr(mod, name), name
