"""migrate of an output the page cache cannot keep: each tensor read back right behind the writer.

No TensorFlow: the ``tf1`` and ``safetensors`` outputs are written natively. The memory
available is faked small (``_behind.memory_available``), so that a small checkpoint takes
the path a 10 GiB one takes on a 24 GiB machine.
"""

from __future__ import annotations

import importlib
import itertools
import os

import numpy as np
import pytest
from support import behind as behind_support
from support.bundles import write_checkpoint

from tf1compat_init import CheckpointCorruptError
from tf1compat_init.migrate import _behind, _stream, migrate

pytestmark = pytest.mark.pure

FORMATS = [("tf1", "m.ckpt"), ("safetensors", "m.safetensors")]


@pytest.fixture
def src(tmp_path):
    rng = np.random.default_rng(1)
    tensors = {f"layer_{i}/w": rng.standard_normal((64, 32)).astype(np.float32) for i in range(12)}
    tensors["big"] = rng.standard_normal((512, 256)).astype(np.float32)  # 512 KiB
    tensors["step"] = np.array(7, np.int64)
    tensors["empty"] = np.zeros((0, 3), np.float32)
    tensors["names"] = np.array([b"a", b"bc"], dtype=object)
    return write_checkpoint(tmp_path / "src" / "model.ckpt", tensors), tensors


@pytest.fixture
def little_memory(monkeypatch):
    return behind_support.little_memory(monkeypatch)


def _migrate(prefix, dst, fmt):
    return migrate(prefix, dst, format=fmt, exclude=["^names$"] if fmt == "safetensors" else ())


def _fixed(tensors):
    return {k for k, v in tensors.items() if v.dtype != object}


def test_only_an_output_too_large_for_the_memory_available_is_read_back_behind(monkeypatch):
    monkeypatch.setattr(_behind, "memory_available", lambda: 1000)
    assert _behind.for_output("/x/out.safetensors", 499) is None  # 998 bytes fit
    assert isinstance(_behind.for_output("/x/out.safetensors", 501), _behind.Behind)
    assert _behind.for_output("gs://bucket/out.safetensors", 10**12) is None  # a URL
    monkeypatch.setattr(_behind, "memory_available", lambda: None)  # not said (not Linux)
    assert _behind.for_output("/x/out.safetensors", 10**12) is None


def test_memory_available_is_what_the_kernel_says():
    got = _behind.memory_available()
    if not os.path.exists("/proc/meminfo"):
        assert got is None
        return
    with open("/proc/meminfo") as f:
        line = next(x for x in f if x.startswith("MemAvailable:"))
    assert abs(got - int(line.split()[1]) * 1024) < 1 << 30  # it moves, but not by a GiB


def _small_chunks(monkeypatch, fmt, chunk):
    """The format's writer gets the source in ``chunk``-sized pieces (8 MiB by default)."""
    module = importlib.import_module(f"tf1compat_init.migrate._{fmt}")
    real = _stream.prefetched
    monkeypatch.setattr(module, "prefetched", lambda view, names: real(view, names, chunk=chunk))


def _coverage(ranges):
    """The ranges sorted, checked not to overlap."""
    out = sorted(ranges)
    for (_, end), (begin, _) in itertools.pairwise(out):
        assert end <= begin, "a byte was read back twice"
    return out


def _cgroups(tmp_path, proc_lines, files):
    root = tmp_path / "cgroup"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    proc = tmp_path / "proc_cgroup"
    proc.write_text("\n".join(proc_lines) + "\n")
    return str(root), str(proc)


def test_a_containers_memory_limit_counts(tmp_path, monkeypatch):
    """cgroup v2 and v1: the limit less the anonymous memory in it; the cgroup's own
    folder, else the mount's root (what a container sees); no limit, no answer."""
    gib = 1 << 30
    v2 = {"pod/memory.max": f"{4 * gib}\n", "pod/memory.stat": f"file 9\nanon {gib}\n"}
    root, proc = _cgroups(tmp_path / "a", ["0::/pod"], v2)
    assert _behind.cgroup_room(root, proc) == 3 * gib
    at_root = {"memory.max": f"{4 * gib}\n", "memory.stat": f"anon {gib}\n"}
    root, proc = _cgroups(tmp_path / "b", ["0::/kubepods/x"], at_root)
    assert _behind.cgroup_room(root, proc) == 3 * gib
    unlimited = {"memory.max": "max\n", "memory.stat": "anon 5\n"}
    root, proc = _cgroups(tmp_path / "c", ["0::/"], unlimited)
    assert _behind.cgroup_room(root, proc) is None
    v1 = {
        "memory/job/memory.limit_in_bytes": f"{2 * gib}\n",
        "memory/job/memory.stat": f"cache 7\nrss 1\ntotal_cache 8\ntotal_rss {gib // 2}\n",
    }
    root, proc = _cgroups(tmp_path / "d", ["4:memory:/job", "0::/"], v1)
    assert _behind.cgroup_room(root, proc) == gib + gib // 2
    v1_none = {"memory/memory.limit_in_bytes": "9223372036854771712\n"}
    root, proc = _cgroups(tmp_path / "e", ["4:cpuacct,memory:/", "0::/"], v1_none)
    assert _behind.cgroup_room(root, proc) is None
    assert _behind.cgroup_room(root, str(tmp_path / "no such file")) is None
    # memory_available: the smaller of the kernel's and the cgroup's
    monkeypatch.setattr(_behind, "cgroup_room", lambda: 1000)
    assert _behind.memory_available() == 1000
    monkeypatch.setattr(_behind, "cgroup_room", lambda: None)
    if os.path.exists("/proc/meminfo"):  # Linux
        assert _behind.memory_available() > 1000


@pytest.mark.parametrize("chunk", [None, 4096])
@pytest.mark.parametrize("fmt,name", FORMATS)
def test_behind_writes_the_same_output_and_reads_each_byte_back_once(
    src, tmp_path, monkeypatch, little_memory, fmt, name, chunk
):
    prefix, tensors = src
    # The same migrate with memory to spare: the reference output.
    with monkeypatch.context() as m:
        m.setattr(_behind, "memory_available", lambda: 1 << 50)
        plain = _migrate(prefix, tmp_path / "plain" / name, fmt)
    assert little_memory == []
    if chunk:
        _small_chunks(monkeypatch, fmt, chunk)
    reads = []
    real = _stream.range_crc

    def counting(f, begin, end, buf, pread, crc=0):
        reads.append((begin, end))
        return real(f, begin, end, buf, pread, crc)

    monkeypatch.setattr(_behind, "range_crc", counting)
    monkeypatch.setattr(_stream, "range_crc", counting)
    monkeypatch.setattr(f"tf1compat_init.migrate._{fmt}.range_crc", counting, raising=False)
    behind = _migrate(prefix, tmp_path / "behind" / name, fmt)
    [b] = little_memory
    assert set(b.checked) == _fixed(tensors)
    got = _coverage(reads)
    want = _coverage((s, e) for s, e, _ in b.checked.values())
    assert sum(e - s for s, e in got) == sum(e - s for s, e in want)
    assert {s for s, _ in want} <= {s for s, _ in got}
    big = b.checked["big"]
    pieces = [r for r in got if big[0] <= r[0] < big[1]]
    assert len(pieces) == (1 if chunk is None else 512 * 1024 // _behind.BATCH)  # one a batch
    for a, z in zip(sorted(plain.files), sorted(behind.files), strict=True):
        with open(a, "rb") as fa, open(z, "rb") as fz:
            assert fa.read() == fz.read(), os.path.basename(z)


@pytest.mark.parametrize("fmt,name", FORMATS)
def test_a_byte_changed_before_its_read_back_is_caught(
    src, tmp_path, monkeypatch, little_memory, fmt, name
):
    """A byte that differs on its way to the file is caught right behind the writer; the
    temporary output is removed and nothing is installed."""
    prefix, _ = src
    flipped = behind_support.flip_before_read_back(monkeypatch, 64 << 10)  # only 'big'
    dst = tmp_path / "out" / name
    with pytest.raises(CheckpointCorruptError, match=r"'big' reads back different.*right after"):
        _migrate(prefix, dst, fmt)
    assert flipped and list(dst.parent.iterdir()) == []


@pytest.mark.parametrize("fmt,name", FORMATS)
def test_an_output_that_disagrees_with_the_read_back_is_caught(
    src, tmp_path, monkeypatch, little_memory, fmt, name
):
    """The index (tf1) or header (safetensors) must put each tensor where it was read back,
    with that CRC32C: a record that differs fails the check at the end."""
    prefix, _ = src
    real = _behind.Behind.finish

    def finish_then_forget(self):
        real(self)
        begin, end, crc = self.checked["big"]
        self.checked["big"] = (begin, end, crc ^ 1)

    monkeypatch.setattr(_behind.Behind, "finish", finish_then_forget)
    dst = tmp_path / "out" / name
    with pytest.raises(CheckpointCorruptError, match=r"'big' of the output .* not what was read"):
        _migrate(prefix, dst, fmt)
    assert list(dst.parent.iterdir()) == []


@pytest.mark.parametrize("fmt,name", FORMATS)
def test_pages_are_let_go_only_on_disk_after_their_read_back_and_a_lag(
    src, tmp_path, monkeypatch, little_memory, fmt, name
):
    prefix, _ = src
    order = []  # ("read", begin, end) / ("drop", begin, end), as they happen
    real = _stream.range_crc

    def reading(f, begin, end, buf, pread, crc=0):
        order.append(("read", begin, end))
        return real(f, begin, end, buf, pread, crc)

    monkeypatch.setattr(_behind, "range_crc", reading)
    monkeypatch.setattr(
        os, "posix_fadvise", lambda fd, off, n, advice: order.append(("drop", off, off + n))
    )
    monkeypatch.setattr(
        _behind._storage, "wait_written", lambda fd, off, n: order.append(("wait", off, off + n))
    )
    _migrate(prefix, tmp_path / "out" / name, fmt)
    drops = [(b, e) for kind, b, e in order if kind == "drop"]
    assert drops, "nothing was let go"
    for at, (kind, begin, end) in enumerate(order):
        if kind != "drop":
            continue
        read = order.index(("read", begin, end))  # raises if never read back
        assert read < at and order[at - 1] == ("wait", begin, end)  # on the disk first
        after = sum(e - b for k, b, e in order[read + 1 : at] if k == "read")
        assert after >= _behind.LAG, (begin, end)  # LAG bytes read back since
    reads = [(b, e) for kind, b, e in order if kind == "read"]
    # Everything but the last LAG bytes read back is let go, in the order it was read.
    assert drops == reads[: len(drops)]
    held = sum(e - b for b, e in reads[len(drops) :])
    assert held < _behind.LAG + max(e - b for b, e in reads)


@pytest.mark.parametrize("fmt,name", FORMATS)
def test_a_computed_value_is_read_back_behind_too(src, tmp_path, monkeypatch, fmt, name):
    """A value a transform computes (a whole array, not the source's stored bytes) is
    written, then read back behind like any other; the output is the usual one."""
    prefix, tensors = src
    rules = {"big": "big_t | transpose(1, 0)"}
    exclude = ["^names$"] if fmt == "safetensors" else ()
    plain = migrate(prefix, tmp_path / "plain" / name, rules, format=fmt, exclude=exclude)
    made = behind_support.little_memory(monkeypatch)
    got = migrate(prefix, tmp_path / "behind" / name, rules, format=fmt, exclude=exclude)
    [b] = made
    assert "big_t" in b.checked and "big" not in b.checked
    begin, end, _ = b.checked["big_t"]
    assert end - begin == tensors["big"].nbytes
    for a, z in zip(sorted(plain.files), sorted(got.files), strict=True):
        with open(a, "rb") as fa, open(z, "rb") as fz:
            assert fa.read() == fz.read(), os.path.basename(z)
