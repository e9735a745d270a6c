"""The benchmark suite runs end to end (``--quick``) and writes well-formed, verified results.

Never asserts a time or a speed-up: only the shape of the JSON, that every restore that
ran was checked against the checkpoint's stored CRC32Cs, and that skipped methods say why.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
RESTORE_METHODS = {
    "raw_read",
    "memcpy",
    "fresh_memory",
    "saver_restore",
    "saver_restore_graph",
    "checkpoint_restore",
    "get_tensor_assign",
    "restorev2_single",
    "restorev2_parallel",
    "restorev2_batched",
    "ours",
    "ours_staged",
    "ours_v1",
    "ours_checkpoint",
    "ours_keras",
}
ALWAYS_RUN = {
    "raw_read",
    "memcpy",
    "fresh_memory",
    "saver_restore",
    "checkpoint_restore",
    "ours",
    "ours_staged",
}


#: A hang guard, not a speed check: the suite runs several test processes at once (xdist,
#: both legs), and a benchmark's own fresh processes then start several times slower.
HANG_S = 900


def _run(args, tmp_path, timeout):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run(
        [sys.executable, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp_path,
        env=env,
    )
    return proc


@pytest.fixture(scope="module")
def restore_quick(tmp_path_factory):
    pytest.importorskip("tensorflow")
    tmp = tmp_path_factory.mktemp("restore_speed")
    out, chart = tmp / "restore.json", tmp / "restore.png"
    proc = _run(
        [BENCH / "restore_speed.py", "--quick", "--out", out, "--chart", chart], tmp, timeout=HANG_S
    )
    return proc, out, chart


def test_restore_speed_quick_runs(restore_quick):
    proc, out, _ = restore_quick
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert out.exists()


def test_restore_speed_json_shape(restore_quick):
    _, out, _ = restore_quick
    result = json.loads(out.read_text())
    assert result["benchmark"] == "restore_speed" and result["quick"] is True
    assert result["device"] == "/CPU:0" and result["h2d_gbps"] is None
    machine = result["machine"]
    for field in ("cpu_count", "cpu_model", "ram_bytes", "tensorflow", "numpy", "python"):
        assert machine.get(field), field
    assert set(result["sizes"]) == {"4M", "small40"}
    assert result["sizes"]["small40"]["tensors"] == 40
    assert result["sizes"]["small40"]["kind"] == "small"
    for size in result["sizes"].values():
        assert set(size["methods"]) == RESTORE_METHODS
        assert size["bytes"] > 0 and size["largest_tensor_bytes"] <= size["bytes"]
        assert set(size["ratios"]) >= {
            "ours_vs_saver_restore",
            "ours_vs_saver_restore_graph",
            "ours_vs_checkpoint_restore",
            "ours_vs_raw_read",
        }
        for name, r in size["methods"].items():
            assert r["status"] in ("ok", "skipped"), (name, r)
            if r["status"] == "skipped":
                assert r["reason"], name
                continue
            assert len(r["times_s"]) == 1 and r["median_s"] > 0 and r["gbps"] > 0, name
            assert len(r["cpu_s"]) == 1 and r["median_cpu_s"] >= 0, name
            assert r["verified"] is True, (name, r.get("wrong_values"))
        for name in ALWAYS_RUN:
            assert size["methods"][name]["status"] == "ok", name
    # --quick starts its fresh processes for the last size only: the peak memory of one of
    # TensorFlow's restores and ours, and one first restore per method.
    probed, unprobed = result["sizes"]["small40"], result["sizes"]["4M"]
    for name in ("saver_restore", "ours"):
        r = probed["methods"][name]
        assert r["peak_extra_bytes"] is not None and r["peak_extra_bytes"] >= 0, name
        assert r["verified_after_memory_run"] is True, name
    for name in ("saver_restore", "checkpoint_restore", "ours", "ours_staged"):
        assert "peak_extra_bytes" not in unprobed["methods"][name], name
    for name in ("saver_restore", "checkpoint_restore", "ours"):
        r = probed["methods"][name]
        assert len(r["cold_times_s"]) == 1 and r["cold_median_s"] > 0, name
        assert r["verified_after_cold_runs"] is True, name
        assert "cold_times_s" not in unprobed["methods"][name], name
    assert probed["ratios"]["first_ours_vs_saver_restore"] > 0
    assert probed["ratios"]["first_ours_vs_checkpoint_restore"] > 0


def test_restore_speed_first_restore_end_to_end(restore_quick):
    """--quick times each front end's first restore once, end to end, on its last size."""
    _, out, _ = restore_quick
    result = json.loads(out.read_text())
    assert "first_restore" not in result["sizes"]["4M"]
    first = result["sizes"]["small40"]["first_restore"]
    bench = _load_bench("_first_restore")
    assert set(first["scenarios"]) == {s.name for s in bench.SCENARIOS}
    for name, r in first["scenarios"].items():
        assert len(r["times_s"]) == 1 and r["median_s"] >= r["restore_median_s"] > 0, name
        assert r["verified"] is True, (name, r.get("wrong_values"))
    # Each of ours against each of TensorFlow's ways for its front end.
    assert set(first["ratios"]) == {
        "graph_ours_vs_graph_saver",
        "graph_ours_vs_graph_tf_init",
        "eager_ours_vs_eager_tf",
        "keras_ours_vs_keras_tf",
    }
    assert all(v > 0 for v in first["ratios"].values())
    table = bench.table(result)
    assert table.count("\n| small40 |") == 4 and "tf1compat_init.v1.init_from_checkpoint" in table


def test_restore_speed_small_goals_are_evaluated(restore_quick):
    _, out, _ = restore_quick
    result = json.loads(out.read_text())
    goals = result["sizes"]["small40"]["goals"]
    assert set(goals) == {
        "ours >= 1.5x saver_restore",
        "ours >= 1.0x saver_restore_graph",
        "ours >= 5.0x checkpoint_restore",
        "ours >= 1.5x saver_restore, first restore in a fresh process",
        "ours >= 5.0x checkpoint_restore, first restore in a fresh process",
    }
    for g in goals.values():
        assert g["ratio"] is not None and isinstance(g["met"], bool)


def test_restore_speed_chart(restore_quick):
    pytest.importorskip("matplotlib")
    _, _, chart = restore_quick
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_restore_speed_refuses_gpu_without_one(tmp_path):
    tf = pytest.importorskip("tensorflow")
    if tf.config.list_physical_devices("GPU"):
        pytest.skip("this machine has a GPU")
    proc = _run(
        [BENCH / "restore_speed.py", "--device", "gpu", "--quick", "--out", tmp_path / "g.json"],
        tmp_path,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "no GPU" in proc.stderr
    assert not (tmp_path / "g.json").exists()


@pytest.mark.pure
def test_plan_scaling_quick(tmp_path):
    out = tmp_path / "plan.json"
    proc = _run([BENCH / "plan_scaling.py", "--quick", "--out", out], tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["benchmark"] == "plan_scaling" and result["sizes"] == [100, 1000]
    assert result["tensorflow_imported"] is False
    assert set(result["cases"]) == {
        "identity",
        "scope_rename",
        "regex",
        "identity_1pct_missing",
    }
    for case in result["cases"].values():
        for n in ("100", "1000"):
            assert case["by_size"][n]["verified"] is True
            assert case["by_size"][n]["median_s"] > 0
        growth = case["growth"]
        assert growth["from"] == 100 and growth["to"] == 1000
        assert growth["nlogn_ratio"] == pytest.approx(15.0)
        assert isinstance(growth["within_nlogn"], bool)
    for parsed in result["open_checkpoint"].values():
        assert parsed["status"] in ("ok", "skipped")
        if parsed["status"] == "ok":
            assert parsed["verified"] is True


def _load_bench(name):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.pure
def test_restore_speed_keeps_sizes_it_did_not_rerun(tmp_path):
    bench = _load_bench("restore_speed")
    old = {
        "created": "2026-01-01T00:00:00",
        "device": "/CPU:0",
        "sizes": {
            "2G": {"kind": "large", "bytes": 2 << 30, "ratios": {}},
            "512M": {"kind": "large", "bytes": 512 << 20, "ratios": {"stale": 1}},
        },
    }
    path = tmp_path / "r.json"
    path.write_text(json.dumps(old))
    new = {
        "device": "/CPU:0",
        "sizes": {
            "small2000": {"kind": "small", "bytes": 125 << 20, "ratios": {}},
            "512M": {"kind": "large", "bytes": 512 << 20, "ratios": {"fresh": 1}},
        },
    }
    bench.carry_over(new, path, lambda line: None)
    assert list(new["sizes"]) == ["512M", "2G", "small2000"]  # large by size, then small
    assert new["sizes"]["512M"]["ratios"] == {"fresh": 1}  # a re-run size is never mixed
    assert new["sizes"]["2G"]["carried_over_from"] == "2026-01-01T00:00:00"
    other_device = dict(new, device="/GPU:0", sizes={})
    bench.carry_over(other_device, path, lambda line: None)
    assert other_device["sizes"] == {}


@pytest.mark.pure
def test_restore_speed_size_specs():
    bench = _load_bench("restore_speed")
    big = bench.parse_size("512M")
    assert big.kind == "large" and big.nbytes == 8 * (4096 * 4096 + 4096) * 4
    assert big.largest == 4096 * 4096 * 4
    small = bench.parse_size("small2000")
    assert small.kind == "small" and len(small.tensors) == 2000
    assert small.nbytes == 2000 * 64 * 1024
    tiny = bench.parse_size("4M")
    assert tiny.kind == "tiny" and tiny.largest <= 4 << 20
    with pytest.raises(Exception, match="bad size"):
        bench.parse_size("lots")


def test_cli_startup_quick(tmp_path):
    """inspect and plan run in fresh processes without importing TensorFlow."""
    pytest.importorskip("tensorflow")
    out = tmp_path / "cli.json"
    proc = _run([BENCH / "cli_startup.py", "--quick", "--out", out], tmp_path, timeout=HANG_S)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    runs = result["results"]
    assert set(runs) == {
        "inspect (ours)",
        "plan (ours)",
        "inspect via TensorFlow",
        "import tensorflow",
    }
    assert runs["inspect (ours)"]["imported_tensorflow"] is False
    assert runs["plan (ours)"]["imported_tensorflow"] is False
    assert '"format": "name-based"' in runs["inspect (ours)"]["stdout_head"]
    assert all(r["median_s"] > 0 for r in runs.values())


@pytest.mark.pure
def test_cli_startup_detects_a_tensorflow_import():
    bench = _load_bench("cli_startup")
    log = "import time:      4317 |    2429078 | tensorflow\nimport time: 1 | 1 |   json\n"
    assert bench.imports_tensorflow(log)
    assert not bench.imports_tensorflow("import time: 1 | 1 |   tensorflow_estimator\n")


@pytest.mark.pure
def test_crc_backends_quick(tmp_path):
    """Every candidate agrees with the others on every input (the script asserts it) and
    each section is written; the backend chosen is named."""
    pytest.importorskip("crc32c")
    pytest.importorskip("google_crc32c")
    out = tmp_path / "crc.json"
    proc = _run([BENCH / "crc_backends.py", "--quick", "--out", out], tmp_path, HANG_S)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["chosen_backend"] == "crc32c"
    assert set(result["speed"]) == {"8MiB", "64KiB", "4KiB"}
    assert len(result["gil"]) == 3 and all(len(rows) == 8 for rows in result["gil"].values())
    zero_copy = result["zero_copy"]
    assert all(row["zero_copy"] for row in zero_copy["crc32c"].values())
    assert not zero_copy["google_crc32c.extend"]["memoryview slice (64 KiB)"]["zero_copy"]


def test_remap_vocab_quick(tmp_path):
    pytest.importorskip("tensorflow")
    out = tmp_path / "remap.json"
    proc = _run(
        [BENCH / "remap_vocab.py", "--quick", "--methods", "ours_transform,tf_warm_start",
         "--out", out],
        tmp_path,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["identical"] is True and result["rows"] == 20_000
    assert set(result["results"]) == {"ours_transform", "tf_warm_start"}
    for r in result["results"].values():
        assert r["best_seconds"] > 0 and r["peak_above_base"] >= 0


@pytest.mark.tf221
def test_run_overhead_quick(tmp_path):
    out = tmp_path / "run.json"
    proc = _run([BENCH / "run_overhead.py", "--quick", "--out", out], tmp_path, timeout=HANG_S)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["quick"] is True and result["goal_s"] == 0.2
    assert set(result["medians_s"]) == {
        "python SCRIPT",
        "tf1compat-init run SCRIPT",
        "tf1compat-init run SCRIPT (uses tf.estimator)",
    }
    assert all(len(runs) == 1 for runs in result["runs_s"].values())


@pytest.mark.tf221
def test_migrate_scale_quick(tmp_path):
    """64 MiB into every format; the JSON says what it measured (no goal is judged here).

    TF 2.21 with Keras 3 (the benchmark's subject) and tf_keras (``keras2``, in its own
    process: Keras 2 refuses bfloat16 in ``keras``, so it gets the float32 tensors).
    """
    out, chart = tmp_path / "scale.json", tmp_path / "scale.png"
    proc = _run(
        [BENCH / "migrate_scale.py", "--quick", "--out", out, "--chart", chart, "--dir", tmp_path],
        tmp_path,
        timeout=HANG_S,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["benchmark"] == "migrate_scale" and result["quick"] is True
    assert result["checkpoint_bytes"] >= 60 << 20 and result["tensors"] > 100
    assert set(result["formats"]) == {"tf1", "safetensors", "tf2", "keras", "keras2"}
    for fmt, r in result["formats"].items():
        if fmt == "keras2":  # tf_keras: the float32 half (its .weights.h5 holds no bfloat16)
            assert 0.3 < r["bytes"] / result["checkpoint_bytes"] < 0.7
        else:
            assert r["bytes"] == result["checkpoint_bytes"], fmt  # every tensor migrated
        assert r["seconds"] > 0 and r["disk_seconds"] > 0 and r["written_bytes"] >= r["bytes"]
        assert r["peak_rss"] >= r["start_rss"] > 0
        assert r["of_disk_limit"] == pytest.approx(r["gb_per_s"] / r["disk_gb_per_s"])
    assert set(result["goals"]["speed >= 0.7x disk limit"]) == set(result["formats"])
    assert chart.stat().st_size > 10_000
    assert not list(tmp_path.glob("migrate_scale_*"))  # the work directory is removed
