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
    "RestorePolicy",
    "RestoreReport",
    "TargetError",
    "Tf1CompatError",
    "UnsupportedCheckpointError",
    "VariableInfo",
    "apply_plan",
    "open_checkpoint",
    "plan_restore",
]


@pytest.mark.pure
def test_engine_all_is_pinned_and_sorted():
    assert tf1compat_init.__all__ == ENGINE
    assert tf1compat_init.__all__ == sorted(
        tf1compat_init.__all__, key=lambda s: (s != s.upper(), s)
    )
    for name in ENGINE:
        assert getattr(tf1compat_init, name) is not None


@pytest.mark.pure
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
        # tf.compat.v1.estimator (TF 2.15) holds tpu; issue 35 names its classes.
        ("tf1compat_init.estimator.v1", {"Estimator", "inputs", "tpu"}),
        (
            "tf1compat_init.estimator.v1.tpu",
            {"InputPipelineConfig", "RunConfig", "TPUConfig", "TPUEstimator", "TPUEstimatorSpec"},
        ),
    ],
)
def test_front_ends_export_what_the_issues_name(module, names):
    pytest.importorskip("tensorflow")
    mod = importlib.import_module(module)
    assert names <= set(mod.__all__), names - set(mod.__all__)
    for name in mod.__all__:
        assert hasattr(mod, name), name


#: Every public module and the names it exported before the move into subpackages (issue 16):
#: the import paths and names stay, whatever file holds them now.
PUBLIC_MODULES = {
    "tf1compat_init.v1": {
        "CheckpointInitHook",
        "PlannedSaver",
        "init_from_checkpoint",
        "init_unrestored",
        "restore_saver",
        "scaffold_init_fn",
        "warm_start",
    },
    "tf1compat_init.keras": {
        "CheckpointInit",
        "CheckpointSaver",
        "KerasModelError",
        "LoggingTensor",
        "StopAtStep",
        "keras_flavour",
        "load_checkpoint",
        "plan_checkpoint",
        "weight_names",
    },
    "tf1compat_init.checkpoint": {
        "InitResult",
        "restore",
        "restore_or_initialize",
        "target_variables",
    },
    "tf1compat_init.estimator": {
        "CheckpointSaverHook",
        "CheckpointSaverListener",
        "Estimator",
        "EstimatorSpec",
        "FeedFnHook",
        "FinalOpsHook",
        "GlobalStepWaiterHook",
        "LoggingTensorHook",
        "ModeKeys",
        "NanLossDuringTrainingError",
        "NanTensorHook",
        "ProfilerHook",
        "RunConfig",
        "SecondOrStepTimer",
        "SessionRunArgs",
        "SessionRunContext",
        "SessionRunHook",
        "SessionRunValues",
        "StepCounterHook",
        "StopAtStepHook",
        "SummarySaverHook",
        "VocabInfo",
        "WarmStartSettings",
        "train_and_evaluate",
    },
    "tf1compat_init.cli": {"build_parser", "main"},
    "tf1compat_init.migrate": {
        "FORMATS",
        "OPTIMIZER_PATTERNS",
        "MigrateResult",
        "RenamedCheckpoint",
        "load_factory",
        "load_map_file",
        "migrate",
        "rename_checkpoint",
    },
    "tf1compat_init.mapping": {"ROOT", "AssignmentMap", "Pair", "Rule"},
    "tf1compat_init.plan": {
        "DEFAULT_OPTIONAL",
        "POLICY_CHOICES",
        "RestorePlan",
        "check_policy_value",
        "check_policy_values",
        "dtype_name",
        "plan_restore",
    },
    "tf1compat_init.apply": {"apply_plan"},
    "tf1compat_init.policy": {
        "DEFAULT_OPTIONAL",
        "POLICY_CHOICES",
        "RestorePolicy",
        "check_policy_value",
        "check_policy_values",
    },
    "tf1compat_init.reader": {
        "CheckpointInfo",
        "VariableInfo",
        "open_checkpoint",
        "resolve_checkpoint_path",
    },
    "tf1compat_init.report": {"Mismatch", "RestoreReport"},
    "tf1compat_init.variables": {
        "Part",
        "TargetVariable",
        "collect_targets",
        "target_name",
        "target_specs",
    },
}
#: Modules that import TensorFlow when imported (the rest import without it).
NEEDS_TF = {"tf1compat_init.v1", "tf1compat_init.estimator"}


@pytest.mark.parametrize("module", sorted(PUBLIC_MODULES))
def test_public_modules_keep_their_paths_and_names(module):
    if module in NEEDS_TF:
        pytest.importorskip("tensorflow")
    mod = importlib.import_module(module)
    names = PUBLIC_MODULES[module]
    assert names <= set(mod.__all__), names - set(mod.__all__)
    for name in mod.__all__:
        assert getattr(mod, name) is not None, name


@pytest.mark.pure
def test_errors_module_keeps_its_classes():
    import tf1compat_init.errors as errors

    for name in ENGINE:
        if name.endswith("Error"):
            assert getattr(errors, name) is getattr(tf1compat_init, name)


@pytest.mark.pure
def test_cli_entry_point_and_python_dash_m():
    import subprocess
    import sys
    import tomllib
    from pathlib import Path

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    scripts = tomllib.loads(pyproject.read_text())["project"]["scripts"]
    assert scripts == {"tf1compat-init": "tf1compat_init.cli:main"}
    module, _, attr = scripts["tf1compat-init"].partition(":")
    assert callable(getattr(importlib.import_module(module), attr))
    out = subprocess.run(
        [sys.executable, "-m", "tf1compat_init", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert tf1compat_init.__version__ in out.stdout


@pytest.mark.pure
def test_engine_names_are_the_modules_objects():
    """The root re-exports (apply_plan lazily, so ``import tf1compat_init`` stays light)."""
    from tf1compat_init import apply, plan, policy

    assert tf1compat_init.apply_plan is apply.apply_plan
    assert tf1compat_init.RestorePolicy is policy.RestorePolicy
    assert tf1compat_init.DEFAULT_OPTIONAL is policy.DEFAULT_OPTIONAL is plan.DEFAULT_OPTIONAL
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        tf1compat_init.nothing  # noqa: B018


#: The public callables that take policy keywords, by module.
POLICY_TAKERS = {
    "tf1compat_init.v1": [
        "init_from_checkpoint",
        "CheckpointInitHook",
        "scaffold_init_fn",
        "restore_saver",
    ],
    "tf1compat_init.checkpoint": ["restore", "restore_or_initialize", "plan_for_root"],
    "tf1compat_init.keras": ["load_checkpoint", "plan_checkpoint", "CheckpointInit"],
    "tf1compat_init.migrate": ["migrate"],
}


@pytest.mark.parametrize("module", sorted(POLICY_TAKERS))
def test_public_functions_spell_out_their_keywords(module):
    """``help()`` and editors show every keyword: no ``**kwargs`` on a public callable."""
    import inspect

    from tf1compat_init.policy import EAGER_KEYWORDS

    if module in NEEDS_TF or module == "tf1compat_init.keras":
        pytest.importorskip("tensorflow")
    mod = importlib.import_module(module)
    for name in POLICY_TAKERS[module]:
        params = inspect.signature(getattr(mod, name)).parameters
        assert not [p for p in params.values() if p.kind is p.VAR_KEYWORD], name
        wanted = (
            ("on_missing", "on_mismatch", "optional")
            if module.endswith("migrate")
            else (EAGER_KEYWORDS)
        )
        assert set(wanted) <= set(params), (name, set(wanted) - set(params))
        assert all(params[k].kind is params[k].KEYWORD_ONLY for k in wanted), name


#: Imports every public module and touches every name it exports, the lazy ones included
#: (the canned estimators, heads, ``experimental``, ``v1``), then prints what was logged.
_TOUCH_EVERY_NAME = """
import importlib, sys
modules = sys.argv[1:] + [
    "tf1compat_init.estimator.experimental", "tf1compat_init.estimator.export",
    "tf1compat_init.estimator.v1", "tf1compat_init.estimator.v1.tpu",
    "tf1compat_init.estimator.head",
    "tf1compat_init.estimator.canned",
]
for name in modules:
    mod = importlib.import_module(name)
    lazy = getattr(mod, "LAZY", None) or getattr(mod, "_LAZY", None) or {}
    for attr in [*getattr(mod, "__all__", ()), *lazy]:
        getattr(mod, attr)
print("touched", len(modules))
"""


def test_importing_every_public_name_logs_nothing():
    """Library code is quiet: no TensorFlow deprecation warning for a call made at import.

    A fresh process, because TensorFlow logs each deprecation once per process.
    """
    import subprocess
    import sys

    pytest.importorskip("tensorflow")
    proc = subprocess.run(
        [sys.executable, "-c", _TOUCH_EVERY_NAME, *sorted(PUBLIC_MODULES)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "touched" in proc.stdout
    logged = [
        line
        for line in proc.stderr.splitlines()
        if "WARNING:tensorflow" in line or "deprecat" in line.lower()
    ]
    assert not logged, "\n".join(logged)
