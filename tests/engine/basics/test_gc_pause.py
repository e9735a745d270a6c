"""tf1compat_init.engine.basics.gc_pause: the cyclic collector paused for a block, then as it was."""

from __future__ import annotations

import gc

import pytest

from tf1compat_init.engine.basics.gc_pause import gc_paused

pytestmark = pytest.mark.pure


@pytest.fixture
def collector_state():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_the_collector_is_off_inside_and_on_again_after(collector_state):
    gc.enable()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off(collector_state):
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_an_exception_in_the_block_still_turns_it_back_on(collector_state):
    gc.enable()
    with pytest.raises(KeyError), gc_paused():
        raise KeyError("x")
    assert gc.isenabled()


def test_nested_pauses_resume_only_at_the_outer_end(collector_state):
    gc.enable()
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
