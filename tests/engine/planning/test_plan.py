"""Plans and reports, pure Python (no TensorFlow)."""

import json

import pytest

from tf1compat_init import (
    AssignmentMapError,
    CheckpointMismatchError,
    plan_restore,
)
from tf1compat_init.plan import dtype_name

pytestmark = pytest.mark.pure

SPEC = {
    "conv1/bias": ((4,), "float32"),
    "conv1/kernel": ((3, 3, 1, 4), "float32"),
    "dense/bias": ((10,), "float32"),
    "opt/x": ((1,), "int64"),
}


@pytest.fixture
def ckpt(fake_checkpoint):
    return fake_checkpoint(SPEC)


def test_identity_plan_report(ckpt):
    plan = plan_restore(
        ckpt, {"conv1/bias": ((4,), "float32"), "extra/w": ((2,), "float32")}, {"conv1/": "conv1/"}
    )
    r = plan.report
    assert r.loaded == {"conv1/bias": "conv1/bias"}
    assert r.untouched == ["extra/w"]
    assert r.unused == ["conv1/kernel", "dense/bias", "opt/x"]
    assert r.ok and not r.applied
    assert [tuple(e[:2]) for e in plan.entries] == [("conv1/bias", "conv1/bias")]
    json.dumps(r.to_dict())
    assert "loaded" in str(r) and "conv1/bias" in str(r)


def test_shape_mismatch_is_error_with_report(ckpt):
    with pytest.raises(CheckpointMismatchError) as e:
        plan_restore(ckpt, {"conv1/bias": ((5,), "float32")})
    assert "shape [5] vs checkpoint [4]" in str(e.value)
    assert "Nothing was changed" in str(e.value)
    assert e.value.report.mismatched[0].target == "conv1/bias"


def test_dtype_mismatch(ckpt):
    with pytest.raises(CheckpointMismatchError, match="dtype float64 vs checkpoint float32"):
        plan_restore(ckpt, {"conv1/bias": ((4,), "double")})


def test_mismatch_warn_skips(ckpt, caplog):
    plan = plan_restore(
        ckpt,
        {"conv1/bias": ((5,), "float32"), "dense/bias": ((10,), "float32")},
        on_mismatch="warn",
    )
    assert [e.target for e in plan.entries] == ["dense/bias"]
    assert not plan.report.ok
    assert "shape [5]" in caplog.text


def test_unknown_dims_are_compatible(ckpt):
    plan = plan_restore(ckpt, {"conv1/kernel": ((3, None, 1, 4), None)})
    assert plan.report.loaded == {"conv1/kernel": "conv1/kernel"}


def test_missing_required_and_optional(ckpt):
    targets = {
        "dense/bias": ((10,), "float32"),
        "global_step": ((), "int64"),
        "dense/bias/Adam": ((10,), "float32"),
    }
    plan = plan_restore(ckpt, targets)
    assert set(plan.report.missing) == {"global_step", "dense/bias/Adam"}
    assert plan.report.ok
    with pytest.raises(
        CheckpointMismatchError, match="global_step <- global_step: not in the checkpoint"
    ):
        plan_restore(ckpt, targets, optional=())


def test_missing_suggests_nearest(ckpt):
    with pytest.raises(CheckpointMismatchError, match="nearest keys: conv1/bias"):
        plan_restore(ckpt, {"conv1/bais": ((4,), "float32")})


def test_missing_warn_and_ignore(ckpt):
    r = plan_restore(ckpt, {"zz": ((1,), "float32")}, on_missing="ignore").report
    assert r.missing == {"zz": "zz"} and not r.ok


def test_targets_accept_tf_style_names_and_dtypes(ckpt):
    import numpy as np

    plan = plan_restore(ckpt, {"conv1/bias:0": ([4], np.float32)})
    assert plan.report.loaded == {"conv1/bias": "conv1/bias"}


def test_bad_policy(ckpt):
    with pytest.raises(ValueError, match="on_missing"):
        plan_restore(ckpt, {}, on_missing="loud")


def test_map_error_propagates(ckpt):
    with pytest.raises(AssignmentMapError):
        plan_restore(ckpt, {"a/x": ((1,), "float32")}, {"conv1/": "b/"})


@pytest.mark.parametrize(
    ("given", "name"),
    [
        ("float32_ref", "float32"),
        ("double", "float64"),
        ("object", "string"),
        ("bfloat16", "bfloat16"),
        (None, None),
    ],
)
def test_dtype_name(given, name):
    assert dtype_name(given) == name


def test_plan_scaling_100k(fake_checkpoint):
    n = 100_000
    spec = {f"old/l{i}/w": ((2,), "float32") for i in range(n)}
    targets = {f"new/l{i}/w": ((2,), "float32") for i in range(n)}
    plan = plan_restore(fake_checkpoint(spec), targets, {"old/": "new/"})
    assert len(plan.entries) == n


def test_bad_optional_regex_is_a_library_error(ckpt):
    with pytest.raises(AssignmentMapError, match=r"optional= holds an invalid regex"):
        plan_restore(ckpt, {"conv1/bias": ((4,), "float32")}, optional=["("])


def test_malformed_state_file_is_a_library_error(tmp_path):
    from tf1compat_init import CheckpointCorruptError, open_checkpoint

    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "a\\x"\n')
    with pytest.raises(CheckpointCorruptError, match=r"state file .*checkpoint is malformed"):
        open_checkpoint(tmp_path)
