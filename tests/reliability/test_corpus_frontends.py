"""The bad-input corpus against every front end: ``tf1compat_init.v1`` (graph and eager),
``tf1compat_init.keras``, ``tf1compat_init.checkpoint``, and the CLI in a subprocess.

Each front end runs every case that applies to it (``support.reliability.CASES``); adding a front end
is one line in ``support.reliability.FRONTENDS``. Per case: the exact error type, a message naming
the path, key, shapes or rule, and nothing changed (every variable compared by value, no
file added or changed). A defect found in a front end owned elsewhere is an
``xfail(strict=True)`` naming it, so the fix turns it into a pass.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from support import reliability as h  # noqa: E402

PY_FRONTENDS = ("v1_graph", "v1_graph_verify", "v1_eager", "keras", "checkpoint")

#: Defects in front ends this suite does not own: (front end, case) -> reason.
KNOWN_DEFECTS: dict[tuple[str, str], str] = {}


def _params():
    for frontend in PY_FRONTENDS:
        for case in h.CASES:
            if frontend not in case.frontends:
                continue
            marks = []
            reason = KNOWN_DEFECTS.get((frontend, case.id))
            if reason:
                marks.append(pytest.mark.xfail(strict=True, reason=reason))
            yield pytest.param(frontend, case, id=f"{frontend}-{case.id}", marks=marks)


@pytest.mark.parametrize("frontend, case", list(_params()))
def test_frontend_corpus(frontend, case, broken, frontend_model, tmp_path):
    src = broken(case.id)
    model = frontend_model(frontend, case.spec)
    h.check_case(case, frontend, model, src, tmp_path)


@pytest.mark.parametrize("frontend", PY_FRONTENDS)
def test_frontend_loads_the_pristine_checkpoints(frontend, ckpts, frontend_model):
    """The control: the same models do change when nothing is wrong (1 and 2 shards)."""
    for which in ("name", "sharded"):
        model = frontend_model(frontend, h.Spec())
        model.load(ckpts[which], h.BASE_MAP)
        assert h.same_values(model.snapshot(), h.CKPT_VALUES), which


@pytest.mark.parametrize("frontend", ["keras", "checkpoint"])
def test_object_based_checkpoint_loads_by_object_path(frontend, ckpts, frontend_model):
    """Where the engine and v1 say "object-based, use restore()", these two load it."""
    model = frontend_model(frontend, h.Spec())
    report = model.load(ckpts["object"], h.BASE_MAP)
    assert report.ok and len(report.loaded) == 4
    assert h.same_values(model.snapshot(), h.CKPT_VALUES)


# -- the CLI ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cli_targets(tmp_path_factory):
    """Target checkpoints for ``plan --target``: the model's names, right and wrong."""
    root = tmp_path_factory.mktemp("targets")
    out = {}
    for name, values in {
        "fits": h.initial_values(),
        "wide": h.initial_values(layers=(("dense", 4, 5), ("out", 5, 2))),
        "f64": h.initial_values(dtype="float64"),
    }.items():
        prefix = str(root / name)
        tf.raw_ops.SaveV2(
            prefix=prefix,
            tensor_names=list(values),
            shape_and_slices=[""] * len(values),
            tensors=[tf.constant(v) for v in values.values()],
        )
        out[name] = prefix
    return out


def _assert_one_line(result: h.CliResult, command: str) -> str:
    assert result.rc == 1, (result.rc, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith(f"tf1compat-init {command}: error: "), line
    assert "Traceback" not in result.stderr and "internal error" not in line, line
    return line


PATH_CASES = [
    "nonexistent",
    "empty_dir",
    "state_file_deleted",
    "index_without_data",
    "missing_shard",
    "truncated_data",
    "truncated_index",
    "garbage_index",
]


@pytest.mark.parametrize("case_id", PATH_CASES)
def test_cli_inspect_corpus(case_id, broken, tmp_path):
    case = h.CASES_BY_ID[case_id]
    src = broken(case_id)
    files = h.tree_digest(tmp_path)
    line = _assert_one_line(h.run_cli("inspect", src["path"]), "inspect")
    for fragment in case.fragments:
        assert fragment.format(**src) in line, line
    assert h.tree_digest(tmp_path) == files


@pytest.mark.parametrize("case_id", [*PATH_CASES, "flipped_byte", "flipped_byte_second_shard"])
def test_cli_migrate_corpus(case_id, broken, tmp_path):
    """A bad source: one line, and nothing at the destination (nor a temporary file)."""
    case = h.CASES_BY_ID[case_id]
    src = broken(case_id)
    out = tmp_path / "out"
    files = h.tree_digest(tmp_path)
    line = _assert_one_line(h.run_cli("migrate", src["path"], out / "m.ckpt"), "migrate")
    for fragment in case.fragments:
        assert fragment.format(**src) in line, line
    assert h.tree_digest(tmp_path) == files  # no output, no temporary, source unchanged
    assert not out.exists() or not any(out.iterdir())


def test_cli_plan_map_typo(ckpts, cli_targets):
    line = _assert_one_line(
        h.run_cli("plan", ckpts["name"], "--target", cli_targets["fits"], "--map", "modle/=/"),
        "plan",
    )
    assert "rule {'modle/': '/'} matches nothing" in line
    assert "no key under 'modle/'" in line


def test_cli_plan_two_keys_one_target(ckpts, cli_targets):
    result = h.run_cli(
        "plan",
        ckpts["name"],
        "--target",
        cli_targets["fits"],
        "--map",
        "model/=/",
        "--map",
        "model/ema/dense/bias=dense/bias",
    )
    line = _assert_one_line(result, "plan")
    assert "two keys would both be named 'dense/bias'" in line
    assert "'model/dense/bias'" in line and "'model/ema/dense/bias'" in line


@pytest.mark.parametrize(
    "target, row",
    [
        ("wide", "dense/bias <- model/dense/bias: shape [5] vs checkpoint [3]"),
        ("f64", "dense/kernel <- model/dense/kernel: dtype float64 vs checkpoint float32"),
    ],
)
def test_cli_plan_mismatch(ckpts, cli_targets, target, row):
    result = h.run_cli("plan", ckpts["name"], "--target", cli_targets[target], "--map", "model/=/")
    line = _assert_one_line(result, "plan")
    assert "the plan does not fit" in line
    assert any(
        r.split()[0] == "mismatched" and " ".join(r.split()[1:]) == row.replace("  ", " ")
        for r in result.stdout.splitlines()
        if r.strip()
    ), result.stdout


def test_cli_plan_reversed_map_lists_the_nearest_keys(ckpts, cli_targets):
    """``--map`` renames forward (old=new): written backwards, every target is missing and
    the listing shows the keys that were meant."""
    result = h.run_cli("plan", ckpts["name"], "--target", cli_targets["fits"], "--map", "/=model/")
    line = _assert_one_line(result, "plan")
    assert "4 target(s) missing" in line
    # The report's own wording (RestoreReport.rows), with the keys as the source names them.
    assert "did you mean model/dense/kernel" in result.stdout


@pytest.mark.parametrize(
    "rules, fragment",
    [
        (["modle/=x/"], "rule {'modle/': 'x/'} matches nothing"),
        (
            ["model/ema/dense/bias=model/dense/bias"],
            "two keys would both be named 'model/dense/bias'",
        ),
    ],
    ids=["typo", "two_keys_one_name"],
)
def test_cli_migrate_bad_map_writes_nothing(ckpts, tmp_path, rules, fragment):
    out = tmp_path / "out"
    args = [a for r in rules for a in ("--map", r)]
    line = _assert_one_line(h.run_cli("migrate", ckpts["name"], out / "m.ckpt", *args), "migrate")
    assert fragment in line
    assert not out.exists() or not any(out.iterdir())


def test_cli_inspect_of_a_corrupt_data_file_reads_only_the_index(broken):
    """``inspect`` lists metadata; a flipped data byte is migrate's and restore's to find."""
    src = broken("flipped_byte")
    result = h.run_cli("inspect", src["path"], "--json")
    assert result.rc == 0 and result.stderr == ""
    listed = {t["key"]: t for t in json.loads(result.stdout)["tensors"]}
    assert listed["model/out/kernel"]["shape"] == [3, 2]


@pytest.mark.parametrize(
    "form",
    ["var_list", "map_list"],
)
def test_v1_graph_partial_partitions_are_refused(form, tmp_path):
    """Two of three ``part_N`` of a partitioned variable would restore part of a tensor."""
    from tf1compat_init import v1 as tci_v1
    from tf1compat_init.errors import TargetError

    prefix = str(tmp_path / "emb.ckpt")
    full = np.arange(12, dtype=np.float32).reshape(6, 2)
    tf.raw_ops.SaveV2(
        prefix=prefix, tensor_names=["emb"], shape_and_slices=[""], tensors=[tf.constant(full)]
    )
    graph = tf.Graph()
    with graph.as_default():
        emb = tf.compat.v1.get_variable(
            "emb",
            shape=(6, 2),
            initializer=tf.compat.v1.constant_initializer(5.0),
            partitioner=tf.compat.v1.fixed_size_partitioner(3),
        )
        parts = list(emb)
        init = tf.compat.v1.global_variables_initializer()
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(init)
            with pytest.raises(TargetError) as info:
                if form == "var_list":
                    tci_v1.init_from_checkpoint(prefix, None, var_list=[parts[0], parts[2]])
                else:
                    tci_v1.init_from_checkpoint(prefix, {"emb": [parts[0], parts[2]]})
            assert "partition(s) of 'emb' do not tile its full shape [6, 2]" in str(info.value)
            sess.run(tf.compat.v1.global_variables_initializer())
            assert all((v == 5.0).all() for v in sess.run(parts))
