"""The bad-input corpus against the engine: ``open_checkpoint`` / ``plan_restore`` /
``apply_plan`` into eager variables, plus the target checks of
:func:`~tf1compat_init.variables.collect_targets` (partitions, shared names).

Every case asserts the exact error type, a message naming the path, key, shapes or
rule, and that nothing changed (values and files). Runs on both legs.
"""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from support import reliability as h  # noqa: E402

import tf1compat_init as tci  # noqa: E402
from tf1compat_init.apply import apply_plan  # noqa: E402
from tf1compat_init.errors import TargetError  # noqa: E402
from tf1compat_init.variables import collect_targets, target_specs  # noqa: E402

ENGINE_CASES = [c for c in h.CASES if "engine" in c.frontends]


@pytest.mark.parametrize("case", ENGINE_CASES, ids=lambda c: c.id)
def test_engine_corpus(case, broken, frontend_model, tmp_path):
    src = broken(case.id)
    model = frontend_model("engine", case.spec)
    h.check_case(case, "engine", model, src, tmp_path)


def test_engine_loads_the_pristine_checkpoint(ckpts, frontend_model):
    """The control: the same model and map do change every value when nothing is wrong."""
    model = frontend_model("engine", h.Spec())
    report = model.load(ckpts["name"], h.BASE_MAP)
    assert report.applied and report.ok
    assert h.same_values(model.snapshot(), h.CKPT_VALUES)
    # The 2-shard copy holds the same values.
    model = frontend_model("engine", h.Spec())
    model.load(ckpts["sharded"], h.BASE_MAP)
    assert h.same_values(model.snapshot(), h.CKPT_VALUES)


@pytest.mark.parametrize(
    "case_id",
    [c.id for c in ENGINE_CASES if c.id not in h.PRISTINE_SOURCES or c.id == "object_for_name"],
)
def test_plan_restore_raises_before_apply(case_id, broken):
    """Path and file problems surface from ``plan_restore(path, ...)``, before any apply."""
    case = h.CASES_BY_ID[case_id]
    src = broken(case_id)
    specs = {n: (v.shape, "float32") for n, v in h.CKPT_VALUES.items()}
    if case_id in ("flipped_byte", "flipped_byte_second_shard"):
        plan = tci.plan_restore(src["path"], specs, h.BASE_MAP)  # checksums are apply's job
        assert len(plan.entries) == 4
        return
    with pytest.raises(tci.Tf1CompatError) as info:
        tci.plan_restore(src["path"], specs, h.BASE_MAP)
    assert type(info.value).__name__ == case.error
    for fragment in case.fragments:
        assert fragment.format(**src) in str(info.value)


# -- targets: partitions and shared names ---------------------------------------------------


def _part(full_name, full_shape, offset, shape, fill=0.0):
    v = tf.Variable(np.full(shape, fill, np.float32), name=full_name.replace("/", "_"))
    v._set_save_slice_info(tf.Variable.SaveSliceInfo(full_name, full_shape, offset, shape))
    return v


TILINGS = {
    "gap": ([((0, 0), (2, 2)), ((3, 0), (3, 2))], "cover 10 of its 12 elements"),
    "overlap": ([((0, 0), (4, 2)), ((2, 0), (4, 2))], "partitions [0:4, 0:2] and [2:6, 0:2]"),
    "outside": ([((0, 0), (4, 2)), ((4, 0), (4, 2))], "[4:8, 0:2] of 'emb' lies outside"),
    "one_of_three": ([((0, 0), (2, 2)), ((4, 0), (2, 2))], "cover 8 of its 12 elements"),
    "axis1_gap": ([((0, 0), (6, 1))], "cover 6 of its 12 elements"),
}


@pytest.mark.parametrize("tiling", sorted(TILINGS))
def test_partitions_that_do_not_tile_are_refused(tiling):
    parts_spec, fragment = TILINGS[tiling]
    parts = [_part("emb", [6, 2], off, shape, fill=3.0) for off, shape in parts_spec]
    with pytest.raises(TargetError) as info:
        collect_targets(parts)
    message = str(info.value)
    assert fragment in message and "'emb'" in message, message
    assert "pass every partition" in message
    assert all((p.numpy() == 3.0).all() for p in parts)


def test_partitions_that_disagree_on_the_full_shape():
    parts = [_part("emb", [6, 2], (0, 0), (3, 2)), _part("emb", [7, 2], (3, 0), (4, 2))]
    with pytest.raises(TargetError, match=r"disagree on its full shape: \[6, 2\], \[7, 2\]"):
        collect_targets(parts)


def test_partitions_that_tile_are_accepted():
    parts = [_part("emb", [6, 2], (i * 2, 0), (2, 2)) for i in (2, 0, 1)]  # any order
    target = collect_targets(parts)["emb"]
    assert target.shape == (6, 2) and [p.offset for p in target.parts] == [(0, 0), (2, 0), (4, 0)]
    grid = [_part("g", [4, 4], (i, j), (2, 2)) for i in (0, 2) for j in (0, 2)]  # 2-D tiling
    assert collect_targets(grid)["g"].partitioned


def test_two_variables_with_one_name_are_refused():
    a, b = tf.Variable(1.0, name="w"), tf.Variable(2.0, name="w")
    with pytest.raises(TargetError, match="2 different variables share the name 'w'"):
        collect_targets([a, b])


def test_partial_partitions_change_nothing_end_to_end(tmp_path):
    """Planning a gap-partitioned target fails before any part is assigned."""
    prefix = str(tmp_path / "emb.ckpt")
    full = np.arange(12, dtype=np.float32).reshape(6, 2)
    tf.raw_ops.SaveV2(
        prefix=prefix, tensor_names=["emb"], shape_and_slices=[""], tensors=[tf.constant(full)]
    )
    parts = [_part("emb", [6, 2], (0, 0), (2, 2), 9.0), _part("emb", [6, 2], (4, 0), (2, 2), 9.0)]
    with pytest.raises(TargetError):
        targets = collect_targets(parts)
        apply_plan(tci.plan_restore(prefix, target_specs(targets)), targets)
    assert all((p.numpy() == 9.0).all() for p in parts)


def test_readme_lists_every_case():
    """tests/reliability/README.md documents each case of the corpus table."""
    from pathlib import Path

    readme = (Path(__file__).parent / "README.md").read_text()
    missing = [c.id for c in h.CASES if f"| `{c.id}` |" not in readme]
    assert missing == [], f"add these cases to tests/reliability/README.md: {missing}"
