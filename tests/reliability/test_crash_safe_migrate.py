"""Crash-safe migration: ``tf1compat-init migrate`` killed, raced and starved of disk.

- SIGKILL at random moments of the work (after the lock appears), and at each stage
  (writing, index written, installing, installed, holding the lock): no output at the
  destination unless complete, no ``*.index`` anywhere but the destination's (nothing a
  loader or a glob could take for a checkpoint), the source unchanged (sha256), and a
  rerun that succeeds;
- two migrates to one destination at once: one succeeds, the other fails with one line;
- a file-size limit (``RLIMIT_FSIZE``) in the child: a clear one-line error, no output,
  no temporary left.

Everything runs ``python -m tf1compat_init migrate`` in a subprocess. TensorFlow is not
needed: the tf1 format is written natively.
"""

from __future__ import annotations

import os
import random
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from support import reliability_light as hl
from support.bundles import write_checkpoint

import tf1compat_init as tci


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """64 MiB in 64 tensors: long enough to be killed part way."""
    rng = np.random.default_rng(0)
    values = {
        f"model/layer_{i:02d}/kernel": rng.standard_normal((512, 512)).astype(np.float32)
        for i in range(64)
    }
    prefix = write_checkpoint(
        tmp_path_factory.mktemp("src") / "model.ckpt-3", values | {"global_step": np.int64(3)}
    )
    digest = hl.tree_digest(os.path.dirname(prefix))
    yield prefix
    assert hl.tree_digest(os.path.dirname(prefix)) == digest, "migrate modified its source"


@pytest.fixture(scope="module")
def source_values(source):
    return tci.open_checkpoint(source).read()


def _cmd(source, dst, *extra):
    return [sys.executable, "-m", "tf1compat_init", "migrate", source, str(dst), "--quiet", *extra]


def _stray_indexes(root: Path, dst: Path) -> list[str]:
    """Every ``*.index`` under ``root`` (hidden directories included) but ``dst.index``."""
    out = []
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            if f.endswith(".index") and p != str(dst) + ".index":
                out.append(os.path.relpath(p, root))
    return out


def _outputs(dst: Path) -> list[str]:
    return sorted(
        p.name for p in dst.parent.iterdir() if p.name.startswith(dst.name + ".") and p.is_file()
    )


def _assert_complete(dst: Path, values: dict) -> None:
    info = tci.open_checkpoint(str(dst))
    got = info.read()
    assert got.keys() == values.keys()
    for k, v in values.items():
        assert hl.same_bits(got[k], v), k


def _assert_crash_left_nothing(out: Path, dst: Path, where: str) -> None:
    assert _outputs(dst) == [], f"{where}: partial output at the destination: {_outputs(dst)}"
    assert _stray_indexes(out, dst) == [], f"{where}: an index outside the destination"


def _rerun_succeeds(source, dst, values) -> None:
    proc = subprocess.run(_cmd(source, dst), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    _assert_complete(dst, values)
    leftovers = [p.name for p in dst.parent.iterdir() if p.name.endswith(".tf1compat-lock")]
    assert leftovers == [], leftovers


def _timeline(source, out: Path) -> tuple[float, float]:
    """A full run: (seconds until the lock appears, seconds of work after it)."""
    dst = out / "m.ckpt"
    start = time.perf_counter()
    proc = subprocess.Popen(_cmd(source, dst), stderr=subprocess.PIPE, text=True)
    locked = None
    while proc.poll() is None:
        if locked is None and any(p.name.endswith(".tf1compat-lock") for p in out.iterdir()):
            locked = time.perf_counter() - start
        time.sleep(0.001)
    total = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr.read()
    return locked or 0.0, total - (locked or 0.0)


def test_sigkill_at_random_moments(source, source_values, tmp_path):
    calib = tmp_path / "calib"
    calib.mkdir()
    to_lock, work = _timeline(source, calib)
    rng = random.Random(1234)
    problems = []
    for trial in range(8):
        out = tmp_path / f"kill{trial}"
        out.mkdir()
        dst = out / "m.ckpt"
        proc = subprocess.Popen(_cmd(source, dst), stderr=subprocess.DEVNULL)
        while proc.poll() is None and not any(p.name.endswith("-lock") for p in out.iterdir()):
            time.sleep(0.0005)
        time.sleep(rng.uniform(0, work))
        proc.send_signal(signal.SIGKILL)
        rc = proc.wait()
        if rc == 0:  # it finished first: then the output is complete
            _assert_complete(dst, source_values)
            continue
        if _stray_indexes(out, dst):
            problems.append((trial, _outputs(dst), _stray_indexes(out, dst)))
        elif os.path.exists(f"{dst}.index"):  # killed after the install: it must be whole
            _assert_complete(dst, source_values)
        elif _outputs(dst):  # data without its index: nothing a loader takes, rerun cleans
            pass
        # A rerun must succeed whatever was left behind (a whole output needs --force).
        if os.path.exists(f"{dst}.index"):
            for p in out.iterdir():
                if p.name.startswith(dst.name + "."):
                    p.unlink()
        _rerun_succeeds(source, dst, source_values)
    assert problems == [], f"lock after {to_lock:.2f} s, work {work:.2f} s; left: {problems}"


_CHILD = r"""
import os, signal, sys
import tf1compat_init.migrate._destination as destination
import tf1compat_init.bundle.writer as bw

stage = sys.argv[1]

def die():
    os.kill(os.getpid(), signal.SIGKILL)

if stage == "locked":
    import tempfile
    tempfile.mkdtemp = lambda *a, **k: die()
elif stage == "writing":  # the 5th tensor, written whole (add) or streamed (add_raw)
    n = [0]
    def killing(real):
        def add(self, *a, **k):
            n[0] += 1
            if n[0] == 5:
                die()
            return real(self, *a, **k)
        return add
    bw.BundleWriter.add = killing(bw.BundleWriter.add)
    bw.BundleWriter.add_raw = killing(bw.BundleWriter.add_raw)
elif stage == "index_written":
    real_finish = bw.BundleWriter.finish
    def finish(self):
        real_finish(self)
        die()
    bw.BundleWriter.finish = finish
elif stage == "installing":
    real_replace, n = os.replace, [0]
    def replace(a, b):
        real_replace(a, b)
        n[0] += 1
        if n[0] == 1:
            die()
    os.replace = replace
elif stage == "installed":
    real_install = destination.install
    def install(*a):
        real_install(*a)
        die()
    destination.install = install

from tf1compat_init.cli import main
sys.exit(main(sys.argv[2:]))
"""

STAGES = [
    pytest.param("locked", id="locked"),
    pytest.param("writing", id="writing"),
    pytest.param("index_written", id="index_written"),
    pytest.param("installing", id="installing"),
    pytest.param("installed", id="installed"),
]


@pytest.mark.parametrize("stage", STAGES)
def test_sigkill_at_each_stage(stage, source, source_values, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    dst = out / "m.ckpt"
    argv = ["migrate", source, str(dst), "--quiet"]
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, stage, *argv], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr)
    if stage == "installed":  # the output was complete before the kill
        _assert_complete(dst, source_values)
        assert _stray_indexes(out, dst) == []
        return
    if stage == "installing":
        # Between the install's renames the data shards are in place but the index, renamed
        # last, is not: no loader takes that for a checkpoint, and the rerun removes it.
        assert not os.path.exists(f"{dst}.index")
        assert _stray_indexes(out, dst) == []
    else:
        _assert_crash_left_nothing(out, dst, stage)
    _rerun_succeeds(source, dst, source_values)


def test_two_migrates_to_one_destination(source, source_values, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    dst = out / "m.ckpt"
    first = subprocess.Popen(_cmd(source, dst), stderr=subprocess.PIPE, text=True)
    while first.poll() is None and not any(p.name.endswith("-lock") for p in out.iterdir()):
        time.sleep(0.0005)
    second = subprocess.run(_cmd(source, dst), capture_output=True, text=True, timeout=120)
    assert first.wait(timeout=120) == 0, first.stderr.read()
    assert second.returncode == 1
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in second.stderr
    line = lines[0]
    assert line.startswith("tf1compat-init migrate: error: "), line
    # Either it met the lock, or (on a slow start) the finished output.
    assert f"another migrate is writing {dst}" in line or "already exists" in line, line
    _assert_complete(dst, source_values)
    assert _stray_indexes(out, dst) == []
    assert {p.name for p in out.iterdir()} == set(_outputs(dst))  # no lock, no temporary


def test_two_migrates_started_together(source, source_values, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    dst = out / "m.ckpt"
    procs = [
        subprocess.Popen(_cmd(source, dst), stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    assert sorted(rc for rc, _ in results) == [0, 1], results
    err = next(e for rc, e in results if rc == 1)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    _assert_complete(dst, source_values)
    assert {p.name for p in out.iterdir()} == set(_outputs(dst))  # no lock, no temporary


def _limit_file_size(limit: int):
    def preexec():
        # Without SIGXFSZ ignored the kernel kills the writer; ignored, write() fails
        # with EFBIG, which is the write failure this test is about.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return preexec


@pytest.mark.parametrize("fmt, name", [("tf1", "m.ckpt"), ("safetensors", "m.safetensors")])
def test_write_failure_gives_a_clear_error_and_no_output(source, tmp_path, fmt, name):
    out = tmp_path / "out"
    out.mkdir()
    dst = out / name
    proc = subprocess.run(
        _cmd(source, dst, "--format", fmt),
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limit_file_size(8 << 20),  # 8 MiB of a 64 MiB source
    )
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    line = lines[0]
    assert line.startswith("tf1compat-init migrate: error: ") and "internal error" not in line
    assert "File too large" in line, line
    assert list(out.iterdir()) == [], [p.name for p in out.iterdir()]  # no output, no temporary


_FACTORY = """
import tensorflow as tf


class Layer(tf.Module):
    def __init__(self):
        super().__init__()
        self.kernel = tf.Variable(tf.zeros([512, 512]))


class Model(tf.Module):
    def __init__(self):
        super().__init__()
        for i in range(64):
            setattr(self, f"layer_{i:02d}", Layer())
        self.global_step = tf.Variable(tf.zeros([], tf.int64))


def build():
    return Model()
"""


@pytest.mark.parametrize("stage", ["writing", "index_written"])
def test_sigkill_while_streaming_tf2(stage, source, source_values, tmp_path):
    """--format tf2 streams through the same BundleWriter (add_raw): killed while writing
    or after its index, the destination holds nothing and a rerun succeeds."""
    pytest.importorskip("tensorflow")
    (tmp_path / "factory_tf2.py").write_text(_FACTORY)
    out = tmp_path / "out"
    out.mkdir()
    dst = out / "ckpt"
    argv = ["migrate", source, str(dst), "--quiet", "--format", "tf2", "--map", "model/=/"]
    argv += ["--model", "factory_tf2:build"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, stage, *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr[-3000:])
    assert _outputs(dst) == [], _outputs(dst)
    rerun = subprocess.run(
        [sys.executable, "-m", "tf1compat_init", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    got = tci.open_checkpoint(str(dst)).read()
    for k, v in source_values.items():
        key = "model/" + k.removeprefix("model/") + "/.ATTRIBUTES/VARIABLE_VALUE"
        assert hl.same_bits(got[key], v), key
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []
