"""Batched assigns: many small variables set by one TensorFlow call, exactly and safely.

A restore with enough small CPU variables assigns them ``BATCH`` at a time through a
hand-built function (:mod:`tf1compat_init.apply._batch`). These tests force batching
on (a process's first small restore does not batch) and check that the values are
bit-exact in every dtype and staging, that a failing batch is redone one assign at a
time, that a failure then still names every variable that may have changed, and that
the stream's memory bound holds with the values it holds back. Both legs.
"""

from __future__ import annotations

import logging
import re
from types import SimpleNamespace

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import tf1compat_init as tci  # noqa: E402
from tf1compat_init import apply as apply_mod  # noqa: E402
from tf1compat_init.apply import _batch as _assign_batch  # noqa: E402
from tf1compat_init.apply import apply_plan  # noqa: E402
from tf1compat_init.apply._assigner import Assigner  # noqa: E402
from tf1compat_init.variables import collect_targets, target_specs  # noqa: E402

BATCH = _assign_batch.BATCH
DTYPES = ["float32", "float16", "int64", "bool", "complex64"]


class InjectedFault(RuntimeError):
    pass


def _value(dtype, shape, rng):
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    dt = np.dtype(dtype)
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * dt.itemsize, dtype=np.uint8)
    return raw.view(dt).reshape(shape)


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """2 x BATCH + 37 small tensors per dtype, plus two big ones, by TF's Saver."""
    rng = np.random.default_rng(11)
    values = {}
    for dtype in DTYPES:
        for i in range(2 * BATCH + 37):
            values[f"{dtype}/v{i:03d}"] = _value(dtype, (4, 6), rng)
    values["big/a"] = _value("float32", (256, 300), rng)  # 300 KiB: assigned alone
    values["big/b"] = _value("int64", (100, 100), rng)
    variables = {k: tf.Variable(v) for k, v in values.items()}
    prefix = tf.compat.v1.train.Saver(var_list=variables).save(
        None, str(tmp_path_factory.mktemp("many") / "model.ckpt")
    )
    return prefix, values


def _fresh(values):
    return {k: tf.Variable(np.zeros_like(v)) for k, v in values.items()}


def _restore(prefix, variables, **kwargs):
    names = {id(v): k for k, v in variables.items()}
    targets = collect_targets(variables.values(), name_of=lambda v: names[id(v)])
    return apply_plan(tci.plan_restore(prefix, target_specs(targets)), targets, **kwargs)


@pytest.fixture
def batching(monkeypatch):
    """Batching on from the first restore, and a count of the batched calls."""
    monkeypatch.setattr(_assign_batch, "_restores", 1)  # "not this process's first"
    calls = []
    real = _assign_batch.BatchAssign.__call__

    def spy(self, dtype, handles, values):
        calls.append((dtype, len(handles)))
        return real(self, dtype, handles, values)

    monkeypatch.setattr(_assign_batch.BatchAssign, "__call__", spy)
    return calls


MODES = {
    "stream": {"staging": "stream", "window_bytes": 64 << 10},  # two passes, stream held back
    "stream_auto": {"staging": "stream"},  # fits: staged whole
    "all": {"staging": "all"},
}


@pytest.mark.parametrize("mode", list(MODES))
def test_batched_restore_is_exact(mode, many, batching):
    prefix, values = many
    variables = _fresh(values)
    _restore(prefix, variables, **MODES[mode])
    for k, v in values.items():
        assert _same(variables[k].numpy(), v), k
    batched = sum(n for _, n in batching)
    assert batching and all(n == BATCH for _, n in batching)
    assert {d.name for d, _ in batching} == set(DTYPES)
    # Whole batches of each dtype went through the function, the rest one by one.
    assert batched == len(DTYPES) * 2 * BATCH


def test_first_restore_batches_only_when_it_pays(monkeypatch):
    monkeypatch.setattr(_assign_batch, "_restores", 0)
    assert _assign_batch.batch_assign(BATCH - 1) is None  # too few: not even counted
    assert _assign_batch.batch_assign(2000) is None  # the first restore: instantiation
    assert _assign_batch.batch_assign(2000) is not None  # ...pays off from the second
    monkeypatch.setattr(_assign_batch, "_restores", 0)
    assert _assign_batch.batch_assign(_assign_batch.BATCH_FIRST) is not None


def test_a_failed_batch_is_redone_one_by_one(many, batching, monkeypatch):
    prefix, values = many

    def broken(self, dtype, handles, values):
        batching.append((dtype, len(handles)))
        raise InjectedFault("a batch failed")

    monkeypatch.setattr(_assign_batch.BatchAssign, "__call__", broken)
    variables = _fresh(values)
    _restore(prefix, variables, staging="all")
    assert batching  # the batches were tried
    for k, v in values.items():
        assert _same(variables[k].numpy(), v), k


def test_a_failure_after_a_failed_batch_names_every_variable_it_may_have_set(
    many, batching, monkeypatch
):
    """The failed call may have set some of its variables before failing: the error
    counts them as changed, so ``.unchanged`` only ever names untouched variables."""
    prefix, values = many
    real = _assign_batch.BatchAssign.__call__
    state = {"calls": 0, "refuse": None}

    def half_then_fail(self, dtype, handles, tensors):
        state["calls"] += 1
        if state["calls"] < 3:
            return real(self, dtype, handles, tensors)
        for h, t in zip(handles[: BATCH // 2], tensors[: BATCH // 2], strict=True):
            tf.raw_ops.AssignVariableOp(resource=h, value=t)  # half of it landed
        state["refuse"] = handles[10]
        raise InjectedFault("the batch call failed half way")

    monkeypatch.setattr(_assign_batch.BatchAssign, "__call__", half_then_fail)
    real_assign_to = Assigner.assign_to

    def assign_to(self, handle, variable, tensor):
        if handle is state["refuse"]:
            raise InjectedFault("and the retry failed too")
        return real_assign_to(self, handle, variable, tensor)

    monkeypatch.setattr(Assigner, "assign_to", assign_to)
    variables = _fresh(values)
    before = {k: v.numpy() for k, v in variables.items()}
    with pytest.raises(tci.PartialRestoreError) as info:
        _restore(prefix, variables, staging="all")
    err = info.value
    changed = {k for k, v in variables.items() if not _same(v.numpy(), before[k])}
    assert changed and changed <= set(err.changed)  # never a changed one called unchanged
    assert not changed & set(err.unchanged)
    assert len(err.changed) + len(err.unchanged) == len(values)
    # Named as maybe changed beyond what did change: only the failed batch's own tail.
    assert len(set(err.changed) - changed) <= BATCH
    assert isinstance(err.__cause__, InjectedFault)


def test_only_plain_cpu_variables_join_a_batch(monkeypatch):
    monkeypatch.setattr(_assign_batch, "_restores", 1)
    assigner = Assigner()
    assigner.start_batching(BATCH)
    assert assigner.batch is not None
    cpu = SimpleNamespace(device="/job:localhost/replica:0/task:0/device:CPU:0")
    gpu = SimpleNamespace(device="/job:localhost/replica:0/task:0/device:GPU:0")
    assert assigner.batchable(cpu)
    assert not assigner.batchable(gpu)  # placed by TensorFlow's own assign, one by one
    assert not assigner.batchable(None)  # a wrapped variable: .assign()
    assigner.start_batching(BATCH - 1)
    assert not assigner.batchable(cpu)


def test_the_stream_keeps_its_bound_with_values_held_back(many, batching, caplog):
    prefix, values = many
    window = 64 << 10
    largest = max(np.asarray(v).nbytes for v in values.values())
    variables = _fresh(values)
    with caplog.at_level(logging.INFO, logger=apply_mod.__name__):
        _restore(prefix, variables, staging="stream", window_bytes=window)
    line = next(r.getMessage() for r in caplog.records if "peak read-ahead" in r.getMessage())
    peak = float(re.search(r"peak read-ahead ([0-9.]+) MiB", line).group(1)) * 2**20
    assert batching  # values were held back for batches
    assert peak <= window + largest + 0.05 * 2**20  # (the log rounds to 0.1 MiB)
    for k, v in values.items():
        assert _same(variables[k].numpy(), v), k
