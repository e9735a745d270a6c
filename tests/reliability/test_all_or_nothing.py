"""All or nothing: a restore that fails part way leaves every variable as it was.

A 2-shard checkpoint of 24 variables (12 per shard). The restore is broken in two ways:

- for real: one flipped byte in the last tensor of the second shard;
- by fault injection after some tensors were read: the reader's checksum pass
  (``verify``), its copy pass (``stream``) or, for checkpoints read into memory, the
  bundle reader's per-tensor read raises on its third call.

A failure after the first assign (the stream's load pass, TensorFlow's assign, a data
file written in place during the restore) cannot be undone without keeping every
replaced value; it raises ``PartialRestoreError`` naming exactly what changed.

Each way runs through ``apply_plan`` (both stagings) and every eager front end; the
v1 graph front end (one ``RestoreV2`` per task) gets the real corruption.
"""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from support import reliability as h  # noqa: E402

import tf1compat_init as tci  # noqa: E402
from tf1compat_init.apply import apply_plan  # noqa: E402
from tf1compat_init.bundle import fastread as _fastread  # noqa: E402
from tf1compat_init.bundle import reader as _bundle  # noqa: E402
from tf1compat_init.variables import collect_targets, target_specs  # noqa: E402

#: 12 layers of 32 -> 32 (kernel and bias): 24 variables, 6 layers per shard.
WIDE = h.Spec(layers=tuple((f"l{i:02d}", 32, 32) for i in range(12)))
VALUES = h.layer_values(WIDE.layers)
EAGER_FRONTENDS = ("engine", "v1_eager", "keras", "checkpoint")


class InjectedFault(OSError):
    """What a failing disk would raise part way through a read."""


@pytest.fixture(scope="module")
def wide_ckpt(tmp_path_factory):
    prefix = h.write_name_based(
        tmp_path_factory.mktemp("wide") / "model.ckpt", shards=2, layers=WIDE.layers
    )
    info = tci.open_checkpoint(prefix)
    shards = {e.shard_id for e in info.bundle.entries.values()}
    assert shards == {0, 1}  # the fixture is what the tests say it is
    return prefix


def _fail_on_call(monkeypatch, owner, name, n):
    """Makes ``owner.name`` raise :class:`InjectedFault` on its ``n``-th call."""
    real = getattr(owner, name)
    calls = []

    def wrapper(*args, **kwargs):
        calls.append(1)
        if len(calls) == n:
            raise InjectedFault(f"injected fault in {name} (call {n})")
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)
    return calls


def _in_load_pass(monkeypatch, n, action):
    """Runs ``action()`` on the ``n``-th copy task of the load pass, the one after
    ``FastReader.verify`` (values staged whole are copied before it, in step 1)."""
    real_verify, real_run = _fastread.FastReader.verify, _fastread._run_task
    calls = []

    def verify(self, keys):
        real_verify(self, keys)
        calls.clear()
        calls.append("armed")

    def run(task):
        if calls and calls[0] == "armed":
            calls.append(1)
            if len(calls) == n + 1:
                action()
        return real_run(task)

    monkeypatch.setattr(_fastread.FastReader, "verify", verify)
    monkeypatch.setattr(_fastread, "_run_task", run)
    return calls


def _raise_fault():
    raise InjectedFault("injected fault in _run_task (load pass)")


def _small_pieces(monkeypatch):
    # One task per tensor or so, so that "the third call" is part way through.
    monkeypatch.setattr(_fastread, "PIECE_BYTES", 4096)
    # A tiny window: this small checkpoint would otherwise fit in it and be staged
    # whole (one pass, no separate verify), and the two-pass path would go untested.
    monkeypatch.setattr(_fastread, "DEFAULT_WINDOW_BYTES", 1024)


def _engine_restore(prefix, model, staging):
    targets = collect_targets(model.variables.values())
    plan = tci.plan_restore(prefix, target_specs(targets), h.BASE_MAP)
    return apply_plan(plan, targets, staging=staging)


def _copy(wide_ckpt, tmp_path):
    return h.copy_checkpoint(wide_ckpt, tmp_path / "src")


def _run(frontend, frontend_model, prefix, staging, error):
    model = frontend_model(frontend, WIDE)
    before = model.snapshot()
    with pytest.raises(error) as info:
        if frontend == "engine":
            _engine_restore(prefix, model, staging)
        else:
            model.load(prefix, h.BASE_MAP)
    assert h.same_values(model.snapshot(), before), "some variables were assigned"
    return info.value


def _cases():
    for frontend in ("engine", "v1_graph", "v1_eager", "keras", "checkpoint"):
        for staging in ("stream", "all") if frontend == "engine" else ("stream",):
            yield pytest.param(frontend, staging, id=f"{frontend}-{staging}")


@pytest.mark.parametrize("frontend, staging", list(_cases()))
def test_flipped_byte_in_second_shard(frontend, staging, wide_ckpt, frontend_model, tmp_path):
    prefix = _copy(wide_ckpt, tmp_path)
    info = tci.open_checkpoint(prefix)
    last = max((e for e in info.bundle.entries.values() if e.shard_id == 1), key=lambda e: e.offset)
    h.flip_byte(info.data_files[1], last.offset + last.size - 2)
    # v1 graph mode reads at initializer time with TensorFlow's RestoreV2: its error is
    # TensorFlow's (see the corpus); what matters here is that nothing was assigned.
    error = Exception if frontend == "v1_graph" else tci.CheckpointCorruptError
    err = _run(frontend, frontend_model, prefix, staging, error)
    if frontend != "v1_graph":
        assert f"checksum mismatch for tensor {last.key!r}" in str(err)
        assert info.data_files[1] in str(err)


def _fault_cases():
    for stage in ("verify", "stream"):
        for frontend in EAGER_FRONTENDS:
            for staging in ("stream", "all") if frontend == "engine" else ("stream",):
                if stage == "verify" and staging == "all":
                    continue  # 'all' has no separate verify pass: it checks in the copy pass
                if stage == "stream" and staging == "stream":
                    continue  # after the first assign: test_fault_after_the_first_assign
                yield pytest.param(stage, frontend, staging, id=f"{stage}-{frontend}-{staging}")


@pytest.mark.parametrize("stage, frontend, staging", list(_fault_cases()))
def test_fault_after_some_tensors_were_read(
    stage, frontend, staging, wide_ckpt, frontend_model, monkeypatch
):
    _small_pieces(monkeypatch)
    name = "_crc_views" if stage == "verify" else "_run_task"
    calls = _fail_on_call(monkeypatch, _fastread, name, 3)
    err = _run(frontend, frontend_model, wide_ckpt, staging, InjectedFault)
    assert "injected fault" in str(err)
    assert len(calls) >= 3  # it did fail part way, after two successful reads


def _changed(before, after):
    return {k for k in before if not h.same_values({k: after[k]}, {k: before[k]})}


def _partial_restore(frontend, frontend_model, prefix, staging="stream"):
    """Runs a restore expected to fail after some assigns; returns (error, changed names)."""
    model = frontend_model(frontend, WIDE)
    before = model.snapshot()
    with pytest.raises(tci.PartialRestoreError) as info:
        if frontend == "engine":
            _engine_restore(prefix, model, staging)
        else:
            model.load(prefix, h.BASE_MAP)
    return info.value, _changed(before, model.snapshot()), len(before)


@pytest.mark.parametrize("frontend", EAGER_FRONTENDS)
def test_fault_after_the_first_assign(frontend, wide_ckpt, frontend_model, monkeypatch):
    """The stream's load pass fails part way: never silent, and it says what changed.

    Every read fault is caught by the verify pass (above). The load pass copies bytes
    already verified, from memory-mapped files: what can still fail there is memory for
    a buffer or TensorFlow itself. Undoing the assigns would cost the restore's size in
    memory (that is ``staging='all'``), so the error names exactly what changed instead.
    """
    _small_pieces(monkeypatch)
    _in_load_pass(monkeypatch, 3, _raise_fault)
    err, changed, total = _partial_restore(frontend, frontend_model, wide_ckpt)
    assert 0 < len(changed) < total  # a real partial restore, not a trivial one
    assert len(err.changed) == len(changed)
    assert len(err.changed) + len(err.unchanged) == total
    if frontend == "engine":  # the same names as the model's own
        assert set(err.changed) == changed
    assert isinstance(err.__cause__, InjectedFault)
    text = str(err)
    assert f"after {len(changed)} of {total} variables were assigned" in text
    assert "injected fault" in text and "run the restore again" in text
    assert "staging='all'" in text


def _failing_assign_op(monkeypatch, n, *, retry_fails):
    """Makes the ``n``-th assign op raise; with ``retry_fails``, its retry through
    ``Assigner.assign_handle`` (TensorFlow's public op, for its typed error) fails too."""
    from tf1compat_init.apply._assigner import Assigner

    failed = []
    real_init, real_assign = Assigner.__init__, Assigner.assign_handle

    def init(self):
        real_init(self)
        fast, calls = self._assign_fast.fast, []

        def op(handle, tensor, *args):
            calls.append(1)
            if len(calls) == n:
                failed.append(handle)
                raise InjectedFault("injected fault in the assign op")
            return fast(handle, tensor, *args)

        self._assign_fast.fast = op

    def assign_handle(self, handle, tensor, *attrs):
        if retry_fails and failed and handle is failed[-1]:
            raise InjectedFault("injected fault in the assign op, retried")
        return real_assign(self, handle, tensor, *attrs)

    monkeypatch.setattr(Assigner, "__init__", init)
    monkeypatch.setattr(Assigner, "assign_handle", assign_handle)
    return failed


@pytest.mark.parametrize("staging", ["stream", "all"])
def test_assign_failure(staging, wide_ckpt, frontend_model, monkeypatch):
    """The reads cannot fail after an assign with staging='all', but TensorFlow can."""
    _small_pieces(monkeypatch)
    failed = _failing_assign_op(monkeypatch, 5, retry_fails=True)
    err, changed, total = _partial_restore("engine", frontend_model, wide_ckpt, staging)
    assert failed and set(err.changed) == changed and len(changed) == 4
    assert len(err.unchanged) == total - 4
    assert isinstance(err.__cause__, InjectedFault) and "retried" in str(err.__cause__)
    assert ("staging='all'" in str(err)) == (staging == "stream")


def test_an_assign_op_that_fails_once_is_retried(wide_ckpt, frontend_model, monkeypatch):
    """TensorFlow declining its fast path is not an error: the wrapper's retry loads it."""
    failed = _failing_assign_op(monkeypatch, 5, retry_fails=False)
    model = frontend_model("engine", WIDE)
    _engine_restore(wide_ckpt, model, "stream")
    assert failed  # the fault did happen
    assert h.same_values(model.snapshot(), VALUES)


def _rewrite_in_place(path):
    """What a tool writing into the data file does: new bytes, a new modification time."""
    import os

    h.flip_byte(path, 0)
    st = os.stat(path)
    # File times come from a coarse kernel clock: move it on explicitly, as any
    # later write would.
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))


def test_data_file_rewritten_during_verification(wide_ckpt, frontend_model, tmp_path, monkeypatch):
    _small_pieces(monkeypatch)
    prefix = _copy(wide_ckpt, tmp_path)
    data = tci.open_checkpoint(prefix).data_files[0]
    real = _fastread.FastReader.verify

    def verify_then_write(self, keys):
        real(self, keys)
        _rewrite_in_place(data)

    monkeypatch.setattr(_fastread.FastReader, "verify", verify_then_write)
    err = _run("engine", frontend_model, prefix, "stream", tci.CheckpointCorruptError)
    assert f"data file {data} was modified while it was being read" in str(err)


def test_data_file_rewritten_during_the_load_pass(wide_ckpt, frontend_model, tmp_path, monkeypatch):
    _small_pieces(monkeypatch)
    prefix = _copy(wide_ckpt, tmp_path)
    data = tci.open_checkpoint(prefix).data_files[1]
    _in_load_pass(monkeypatch, 3, lambda: _rewrite_in_place(data))
    err, changed, total = _partial_restore("engine", frontend_model, prefix)
    assert set(err.changed) == changed and changed  # what was assigned is named
    assert isinstance(err.__cause__, tci.CheckpointCorruptError)
    assert f"data file {data} was modified while it was being read" in str(err)


def test_fault_in_the_in_memory_path(wide_ckpt, frontend_model, monkeypatch):
    """A checkpoint without the fast reader is read whole, then assigned."""

    class NoBundle:  # what apply_plan sees for a checkpoint it cannot stream
        def __init__(self, info):
            self.prefix, self.format, self.variables = info.prefix, info.format, info.variables
            self.read = info.read

    model = frontend_model("engine", WIDE)
    before = model.snapshot()
    targets = collect_targets(model.variables.values())
    info = tci.open_checkpoint(wide_ckpt)
    plan = tci.plan_restore(NoBundle(info), target_specs(targets), h.BASE_MAP)
    monkeypatch.setattr(_bundle, "ThreadPoolExecutor", _SerialPool)  # deterministic order
    calls = _fail_on_call(monkeypatch, _bundle.BundleReader, "_read_entry", 3)
    with pytest.raises(InjectedFault):
        apply_plan(plan, targets)
    assert len(calls) >= 3
    assert h.same_values(model.snapshot(), before)
    # And without the fault, the same plan loads everything.
    monkeypatch.undo()
    apply_plan(plan, targets)
    assert h.same_values(model.snapshot(), VALUES)


class _SerialPool:
    """A ThreadPoolExecutor stand-in that runs each task at submit."""

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def submit(self, fn, *args, **kwargs):
        from concurrent.futures import Future

        f = Future()
        try:
            f.set_result(fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - handed to the waiter, as a pool does
            f.set_exception(e)
        return f

    def map(self, fn, *iterables):
        return [fn(*a) for a in zip(*iterables, strict=False)]

    def shutdown(self, *args, **kwargs):
        pass


@pytest.mark.parametrize("frontend", EAGER_FRONTENDS)
def test_control_the_same_restore_succeeds(frontend, wide_ckpt, frontend_model):
    """Without a fault the same models change: the tests above could see a partial write."""
    model = frontend_model(frontend, WIDE)
    if frontend == "engine":
        _engine_restore(wide_ckpt, model, "stream")
    else:
        model.load(wide_ckpt, h.BASE_MAP)
    assert h.same_values(model.snapshot(), VALUES)
