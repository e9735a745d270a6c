"""The tf1compat-init CLI, in-process and as a user runs it (subprocesses), bad input included."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.bundles import write_checkpoint

from tf1compat_init import open_checkpoint
from tf1compat_init.cli import main
from tf1compat_init.cli._progress import ProgressBar

TENSORS = {
    "model/fc1/kernel": np.arange(12, dtype=np.float32).reshape(4, 3) / 3,
    "model/fc1/bias": np.array([0.5, -0.0, 2.0], np.float32),
    "model/fc1/kernel/Adam": np.zeros((4, 3), np.float32),
    "global_step": np.array(5, np.int64),
    "vocab": np.array([b"a", b"bc"], dtype=object),
}


@pytest.fixture
def ckpt(tmp_path):
    return write_checkpoint(tmp_path / "src" / "model.ckpt-5", TENSORS)


def run_main(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# -- inspect ------------------------------------------------------------------------------


def test_inspect_text_and_json(capsys, ckpt):
    rc, out, err = run_main(capsys, "inspect", os.path.dirname(ckpt))
    assert rc == 0 and err == ""
    assert "format      name-based" in out and f"checkpoint  {ckpt}" in out
    row = next(line for line in out.splitlines() if line.startswith("model/fc1/kernel "))
    assert row.split() == ["model/fc1/kernel", "[4,", "3]", "float32", "48"]
    rc, out, _ = run_main(capsys, "inspect", ckpt + ".index", "--json")
    data = json.loads(out)
    assert data["format"] == "name-based" and data["num_tensors"] == 5
    by_key = {t["key"]: t for t in data["tensors"]}
    assert by_key["global_step"] == {
        "key": "global_step",
        "shape": [],
        "dtype": "int64",
        "bytes": 8,
    }
    assert by_key["vocab"]["dtype"] == "string"
    assert data["shards"] == [ckpt + ".data-00000-of-00001"]


@pytest.mark.parametrize(
    "path, message",
    [
        ("{d}/nope/model.ckpt", "directory {d}/nope does not exist"),
        ("{d}/src/model.ckpt-9", "model.ckpt-9.index does not exist; checkpoints in"),
        ("{d}/empty", "no checkpoint in directory"),
    ],
)
def test_inspect_bad_paths(capsys, ckpt, tmp_path, path, message):
    (tmp_path / "empty").mkdir()
    rc, out, err = run_main(capsys, "inspect", path.format(d=tmp_path))
    assert rc == 1 and out == ""
    line = _one_line(err)
    assert line.startswith("tf1compat-init inspect: error: ")
    assert message.format(d=tmp_path) in line


# -- plan ---------------------------------------------------------------------------------


def test_plan_table_is_the_reports_own_rows(capsys, ckpt, tmp_path):
    """One wording: the table's rows are RestoreReport.rows() over the source's names."""
    from tf1compat_init import plan_restore
    from tf1compat_init.migrate import rename_checkpoint

    target = write_checkpoint(
        tmp_path / "tgt" / "t.ckpt",
        {
            "encoder/fc1/kernel": np.zeros((4, 3), np.float32),  # loaded, renamed
            "encoder/fc1/bias": np.zeros(4, np.float32),  # mismatched
            "encoder/fc2/bias": np.zeros(3, np.float32),  # missing
        },
    )
    argv = ["plan", ckpt, "--target", target, "--map", "model/=encoder/", "--exclude", "Adam"]
    rc, out, _ = run_main(capsys, *argv)
    assert rc == 1
    view = rename_checkpoint(ckpt, [("model/", "encoder/")], exclude=["Adam"])
    specs = {n: (i.shape, i.dtype) for n, i in open_checkpoint(target).variables.items()}
    report = plan_restore(view, specs, None, on_missing="ignore", on_mismatch="ignore").report
    rows = report.rows(lambda n: view.source_names.get(n, n))
    rows += [("excluded", k, why) for k, why in view.excluded.items()]
    table = [line.split(None, 2) for line in out.splitlines()[2:]]
    assert table == [[s, n, " ".join(t.split())] for s, n, t in rows]
    sections = [r[0] for r in rows]
    assert sections == ["mismatched", "missing", "loaded", "unused", "unused", "excluded"]
    assert "<- model/fc1/kernel (renamed encoder/fc1/kernel)" in out
    assert "<- model/fc1/bias: shape [4] vs checkpoint [3]" in out  # the source's name


def test_plan_against_a_checkpoint(capsys, ckpt, tmp_path):
    target = write_checkpoint(
        tmp_path / "tgt" / "t.ckpt",
        {"encoder/fc1/kernel": np.zeros((4, 3), np.float32), "encoder/fc1/bias": np.zeros(3)},
    )
    rc, out, err = run_main(capsys, "plan", ckpt, "--target", target, "--map", "model/=encoder/")
    assert rc == 1  # encoder/fc1/bias is float64 in the target: a mismatch
    assert "mismatched  encoder/fc1/bias" in out
    assert "dtype float64 vs checkpoint float32" in out
    assert "loaded      encoder/fc1/kernel" in out and "<- model/fc1/kernel" in out
    assert _one_line(err).startswith("tf1compat-init plan: error: the plan does not fit")
    target = write_checkpoint(
        tmp_path / "tgt2" / "t.ckpt",
        {"encoder/fc1/kernel": np.zeros((4, 3), np.float32), "step": np.array(1, np.int64)},
    )
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"model/": "encoder/", "global_step": "step"}))
    rc, out, err = run_main(capsys, "plan", ckpt, "--target", target, "--map-file", rules, "--json")
    assert rc == 0 and err == ""
    data = json.loads(out)
    assert (
        data["ok"]
        and {"target": "step", "source": "global_step", "renamed_to": "step"} in (data["mapping"])
    )
    assert "vocab" in data["unused"]


def test_plan_map_that_matches_nothing(capsys, ckpt):
    rc, out, err = run_main(capsys, "plan", ckpt, "--target", ckpt, "--map", "modle/=enc/")
    assert rc == 1 and out == ""
    assert "rule {'modle/': 'enc/'} matches nothing" in _one_line(err)


# -- diff ---------------------------------------------------------------------------------


def test_diff_exit_codes(capsys, ckpt, tmp_path):
    rc, out, err = run_main(capsys, "diff", ckpt, ckpt)
    assert rc == 0 and "no differences" in out
    changed = dict(TENSORS)
    changed["model/fc1/bias"] = np.array([0.5, 0.0, 2.25], np.float32)  # -0.0 -> 0.0, 2 -> 2.25
    changed["model/fc1/kernel"] = np.zeros((3, 4), np.float32)
    del changed["vocab"]
    changed["extra"] = np.ones(2, np.float32)
    other = write_checkpoint(tmp_path / "b" / "m.ckpt", changed)
    rc, out, _ = run_main(capsys, "diff", ckpt, other)
    assert rc == 1
    assert "only in A (1):\n  vocab" in out and "only in B (1):\n  extra" in out
    assert "model/fc1/kernel  [4, 3] float32  ->  [3, 4] float32" in out
    assert "model/fc1/bias  max |a-b| = 0.25" in out
    rc, out, _ = run_main(capsys, "diff", ckpt, other, "--json")
    data = json.loads(out)
    assert rc == 1 and not data["identical"] and data["max_abs_diff"]["model/fc1/bias"] == 0.25
    assert data["max_abs_diff"]["global_step"] == 0.0
    rc, out, err = run_main(capsys, "diff", ckpt, tmp_path / "missing")
    assert rc == 2 and "tf1compat-init diff: error:" in _one_line(err)


def test_diff_with_a_map_and_bitwise_only(capsys, ckpt, tmp_path):
    renamed = {k.replace("model/", "enc/"): v for k, v in TENSORS.items()}
    renamed["enc/fc1/bias"] = np.array([0.5, 0.0, 2.0], np.float32)  # equal numbers, other bits
    other = write_checkpoint(tmp_path / "b" / "m.ckpt", renamed)
    rc, out, _ = run_main(capsys, "diff", ckpt, other, "--map", "model/=enc/")
    assert rc == 1
    assert "enc/fc1/bias  max |a-b| = 0 (bitwise only)" in out


# -- migrate ------------------------------------------------------------------------------


def test_migrate_tf1_and_existing_output(capsys, ckpt, tmp_path):
    dst = tmp_path / "out" / "renamed.ckpt"
    rc, out, err = run_main(
        capsys, "migrate", ckpt, dst, "--map", "model/=encoder/", "--drop-optimizer"
    )
    assert rc == 0 and err == ""
    assert out.startswith(f"wrote {dst} (tf1): 3 tensors")
    assert "renamed   model/fc1/kernel -> encoder/fc1/kernel" in out
    assert "excluded  model/fc1/kernel/Adam (optimizer state" in out
    assert sorted(open_checkpoint(dst).variables) == [
        "encoder/fc1/bias",
        "encoder/fc1/kernel",
        "vocab",
    ]
    assert "excluded  global_step (optimizer state" in out
    rc, out, err = run_main(capsys, "migrate", ckpt, dst)
    assert rc == 1 and "already exists; pass --force" in _one_line(err)
    rc, out, err = run_main(capsys, "migrate", ckpt, dst, "--force", "--quiet")
    assert rc == 0 and out == "" and err == ""
    rc, out, _ = run_main(capsys, "migrate", ckpt, tmp_path / "j.ckpt", "--json")
    data = json.loads(out)
    assert data["verified"] and data["format"] == "tf1" and data["tensors"]["vocab"] == "vocab"


def test_migrate_safetensors_strings_are_a_clear_error(capsys, ckpt, tmp_path):
    dst = tmp_path / "m.safetensors"
    rc, out, err = run_main(capsys, "migrate", ckpt, dst, "--format", "safetensors")
    assert rc == 1
    line = _one_line(err)
    assert "safetensors cannot hold dtype string (key 'vocab')" in line
    assert "--exclude '^vocab$'" in line
    assert not dst.exists()
    rc, out, err = run_main(
        capsys, "migrate", ckpt, dst, "--format", "safetensors", "--exclude", "^vocab$"
    )
    assert rc == 0 and dst.exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        ([], "the following arguments are required: COMMAND"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["migrate", "{ckpt}"], "the following arguments are required: DST"),
        (["migrate", "{ckpt}", "{d}/x", "--format", "onnx"], "invalid choice: 'onnx'"),
        (["migrate", "{ckpt}", "{d}/x", "--map", "model/"], "--map takes OLD=NEW"),
        (["plan", "{ckpt}"], "the following arguments are required: --target"),
        (["migrate", "{ckpt}", "{d}/x", "--model", "m:f"], "only with --format tf2 or keras"),
    ],
)
def test_usage_errors_exit_2(capsys, ckpt, tmp_path, argv, message):
    rc, out, err = run_main(capsys, *[a.format(ckpt=ckpt, d=tmp_path) for a in argv])
    assert rc == 2 and out == ""
    assert message in _one_line(err)


@pytest.mark.parametrize("command", ["inspect", "plan", "diff", "migrate"])
def test_help_has_an_example(capsys, command):
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0
    assert "example:" in out and f"tf1compat-init {command} " in out


def test_progress_bar_on_a_terminal_and_off_it():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    bar = ProgressBar("migrate", tty)
    bar(50, 100, "dense/kernel")
    bar.close()
    assert "\rmigrate [" in tty.getvalue() and "50%" in tty.getvalue()
    plain = io.StringIO()
    ticks = iter([0.0, 1.0, 2.0])  # made at 0 s, the two calls at 1 s and 2 s
    bar = ProgressBar("migrate", plain, interval=0.0, clock=lambda: next(ticks))
    bar(5 * 10**8, 10**9, "x")
    bar(10**9, 10**9, "y")
    assert plain.getvalue().splitlines() == [
        "migrate: 50% (476.8 MiB of 953.7 MiB, 0.50 GB/s)",
        "migrate: 100% (953.7 MiB of 953.7 MiB, 0.50 GB/s)",
    ]
    assert "GB/s" in tty.getvalue()
    quiet = io.StringIO()
    ProgressBar("migrate", quiet, enabled=False)(1, 2, "x")
    fast = io.StringIO()
    ProgressBar("migrate", fast)(2, 2, "x")  # done before the first heartbeat: silent
    assert quiet.getvalue() == "" and fast.getvalue() == ""


# -- as a user runs it: subprocesses --------------------------------------------------------


def _run(*argv, env=None, timeout=240):
    env = dict(os.environ if env is None else env)
    return subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, env=env, timeout=timeout
    )


def _user_env():
    env = dict(os.environ)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)  # as a user has it: unset
    return env


def test_console_script_and_module_run(ckpt):
    script = Path(sys.executable).with_name("tf1compat-init")
    commands = [[sys.executable, "-m", "tf1compat_init"]]
    if script.exists():
        commands.append([str(script)])
    for cmd in commands:
        run = _run(*cmd, "inspect", ckpt, "--json")
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["checkpoint"] == ckpt
        assert run.stderr == ""


def test_inspect_plan_diff_and_native_migrate_never_import_tensorflow(ckpt, tmp_path):
    code = f"""
import json, sys
from tf1compat_init.cli import main
rcs = [
    main(["inspect", {ckpt!r}, "--quiet"]),
    main(["plan", {ckpt!r}, "--target", {ckpt!r}, "--json"]),
    main(["diff", {ckpt!r}, {ckpt!r}, "--quiet"]),
    main(["migrate", {ckpt!r}, {str(tmp_path / "o.ckpt")!r}, "--quiet"]),
    main(["migrate", {ckpt!r}, {str(tmp_path / "o.st")!r}, "--format", "safetensors",
          "--exclude", "vocab", "--quiet"]),
]
sys.stdout.write("\\nRESULT " + json.dumps([rcs, "tensorflow" in sys.modules, "keras" in sys.modules]))
"""
    run = _run(sys.executable, "-c", code)
    assert run.returncode == 0, run.stderr
    rcs, tf_loaded, keras_loaded = json.loads(run.stdout.split("RESULT ")[-1])
    assert rcs == [0, 0, 0, 0, 0]
    assert not tf_loaded and not keras_loaded


@pytest.mark.parametrize(
    "argv, rc, message",
    [
        (["inspect", "{d}/missing/model.ckpt"], 1, "does not exist"),
        (["inspect", "{d}/empty"], 1, "no checkpoint in directory"),
        (["migrate", "{ckpt}", "{d}/o.ckpt", "--map", "nope/=x/"], 1, "matches nothing"),
        (["migrate", "{ckpt}", "{d}/exists.ckpt"], 1, "already exists; pass --force"),
        (
            ["migrate", "{ckpt}", "{d}/m.h5", "--format", "keras", "--model", "{d}/m.py:f"],
            1,
            "must end with .weights.h5",
        ),
        (["diff", "{ckpt}", "{d}/empty"], 2, "no checkpoint in directory"),
        (["inspect"], 2, "the following arguments are required: PATH"),
    ],
)
def test_bad_input_as_a_user_sees_it(ckpt, tmp_path, argv, rc, message):
    (tmp_path / "empty").mkdir()
    (tmp_path / "m.py").write_text("def f():\n    return None\n")
    write_checkpoint(tmp_path / "exists.ckpt", {"a": np.zeros(1, np.float32)})
    run = _run(
        sys.executable,
        "-m",
        "tf1compat_init",
        *[a.format(ckpt=ckpt, d=tmp_path) for a in argv],
        env=_user_env(),
    )
    assert run.returncode == rc, run.stderr
    assert run.stdout == ""
    assert message in _one_line(run.stderr)


def test_debug_shows_the_traceback(tmp_path):
    run = _run(sys.executable, "-m", "tf1compat_init", "inspect", tmp_path / "x", "--debug")
    assert run.returncode == 1
    assert "Traceback" in run.stderr and run.stderr.strip().splitlines()[-1].startswith(
        "tf1compat-init inspect: error:"
    )


# -- with TensorFlow: model factories, tf2 and keras formats --------------------------------

tf = pytest.importorskip("tensorflow")
h = pytest.importorskip("support.migrate_helpers")


@pytest.fixture(scope="module")
def sub_models(tmp_path_factory):
    return h.write_sub_models(tmp_path_factory.mktemp("sub"))


@pytest.fixture(scope="module")
def factories(tmp_path_factory):
    return h.factory_file(tmp_path_factory.mktemp("factories"))


def test_plan_against_a_model_factory(capsys, sub_models, factories):
    rc, out, err = run_main(
        capsys, "plan", sub_models[1], "--target", f"{factories}:build_module", "--map", "model/=/"
    )
    assert rc == 0, err
    assert "4 loaded, 0 missing" in out
    assert re.search(r"loaded +fc1/kernel +<- model/fc1/kernel \(renamed fc1/kernel\)", out)
    rc, out, err = run_main(capsys, "plan", sub_models[1], "--target", f"{factories}:build_module")
    assert rc == 1
    # The report's own wording (RestoreReport.rows), as str(report) shows it.
    assert re.search(
        r"missing +fc1/kernel +<- fc1/kernel not in checkpoint; did you mean model/", out
    )


def test_tf2_migrate_in_a_subprocess_is_quiet(sub_models, factories, tmp_path):
    """TensorFlow's start-up log stays off the terminal; the output restores with TF."""
    dst = tmp_path / "tf2" / "ckpt"
    run = _run(
        sys.executable,
        "-m",
        "tf1compat_init",
        "migrate",
        sub_models[1],
        dst,
        "--format",
        "tf2",
        "--model",
        f"{factories}:build_module",
        "--map",
        "model/=/",
        "--drop-optimizer",
        env=_user_env(),
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    assert run.stdout.startswith(f"wrote {dst} (tf2): 4 tensors")
    assert "unused" not in run.stdout  # global_step is optimizer state: dropped too
    assert "excluded  global_step (optimizer state)" in run.stdout
    models = _load(factories)
    fresh = models.build_module()
    tf.train.Checkpoint(model=fresh).restore(str(dst)).assert_consumed()
    source = h.tf_values(sub_models[1])
    assert h.same_bits(fresh.fc2.kernel.numpy(), source["model/fc2/kernel"])


def test_keras_migrate_errors_are_one_line(capsys, sub_models, factories, tmp_path):
    out_path = tmp_path / "k.weights.h5"
    rc, out, err = run_main(
        capsys,
        "migrate",
        sub_models[0],
        out_path,
        "--format",
        "keras",
        "--model",
        f"{factories}:build_keras_wrong",
    )
    assert rc == 1 and not out_path.exists()
    assert "fc1/bias <- fc1/bias: shape [5] vs checkpoint [3]" in _one_line(err)
    rc, out, err = run_main(
        capsys,
        "migrate",
        sub_models[0],
        out_path,
        "--format",
        "keras",
        "--model",
        f"{factories}:no_such_function",
    )
    assert rc == 1 and "has no attribute 'no_such_function'" in _one_line(err)
    rc, out, err = run_main(
        capsys,
        "migrate",
        sub_models[0],
        out_path,
        "--format",
        "keras",
        "--model",
        f"{factories}:build_boom",
    )
    line = _one_line(err)
    assert rc == 1 and f"the model factory {factories}:build_boom raised RuntimeError" in line
    rc, out, err = run_main(
        capsys,
        "migrate",
        sub_models[0],
        out_path,
        "--format",
        "keras",
        "--model",
        f"{factories}:build_keras",
    )
    assert rc == 0 and out.startswith(f"wrote {out_path} (keras): 4 tensors"), err


def _load(path: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location("_cli_test_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_inspect_and_diff_object_based_by_object_path(capsys, sub_models, factories, tmp_path):
    models = _load(factories)
    module = models.build_module()
    for v in module.trainable_variables:
        v.assign(tf.ones_like(v))
    path = tf.train.Checkpoint(model=module).write(str(tmp_path / "obj" / "ckpt"))
    rc, out, _ = run_main(capsys, "inspect", path, "--json")
    rows = {t["object_path"]: t for t in json.loads(out)["tensors"]}
    assert rc == 0 and json.loads(out)["format"] == "object-based"
    assert rows["model/fc1/kernel"]["key"] == "model/fc1/kernel/.ATTRIBUTES/VARIABLE_VALUE"
    assert rows["model/fc1/kernel"]["shape"] == [4, 3]
    rc, out, _ = run_main(capsys, "inspect", path)
    assert out.splitlines()[5].split()[:2] == ["object", "path"]
    # A TF1 checkpoint against the object-based one, compared by object path.
    rc, out, _ = run_main(capsys, "diff", sub_models[1], path, "--exclude", "Adam|beta|global_step")
    assert rc == 1 and "model/fc1/kernel  max |a-b| = " in out
