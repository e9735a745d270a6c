"""``FastPath``: TensorFlow's private shortcuts tried first, refusals remembered, the
public call otherwise (pure Python: no TensorFlow needed)."""

from __future__ import annotations

import pytest

from tf1compat_init.apply._fastpath import FastPath, private

pytestmark = pytest.mark.pure


def _recorder(calls, name, refuse=()):
    def call(key, value):
        calls.append((name, key))
        if key in refuse:
            raise TypeError(f"{name} refuses {key}")
        return f"{name}:{value}"

    return call


def test_the_shortcut_serves_and_is_counted():
    calls = []
    path = FastPath("test", _recorder(calls, "fast"), _recorder(calls, "public"))
    assert path("a", "a", 1) == "fast:1"
    assert path("b", "b", 2) == "fast:2"
    assert calls == [("fast", "a"), ("fast", "b")] and path.taken == 2


def test_a_refusal_is_remembered_for_its_key_only():
    calls = []
    path = FastPath("test", _recorder(calls, "fast", refuse={"bool"}), _recorder(calls, "public"))
    assert path("bool", "bool", 1) == "public:1"  # refused, then the public way
    assert path("bool", "bool", 2) == "public:2"  # not tried again
    assert path("f32", "f32", 3) == "fast:3"  # other keys still take the shortcut
    assert calls == [("fast", "bool"), ("public", "bool"), ("public", "bool"), ("fast", "f32")]
    assert path.refused == {"bool"} and path.taken == 1


def test_without_remember_every_call_tries_the_shortcut_again():
    calls = []
    fast = _recorder(calls, "fast", refuse={"x"})
    path = FastPath("test", fast, _recorder(calls, "public"), remember=False)
    assert path("x", "x", 1) == "public:1"
    assert path("x", "x", 2) == "public:2"
    assert calls == [("fast", "x"), ("public", "x"), ("fast", "x"), ("public", "x")]
    assert not path.refused


def test_the_public_calls_error_is_the_one_raised():
    path = FastPath(
        "test",
        _recorder([], "fast", refuse={"k"}),
        _recorder([], "public", refuse={"k"}),
        remember=False,
    )
    with pytest.raises(TypeError, match="public refuses k"):
        path("k", "k", 1)


def test_no_shortcut_goes_the_public_way():
    calls = []
    path = FastPath("test", None, _recorder(calls, "public"))
    assert path("a", "a", 1) == "public:1" and calls == [("public", "a")]


def test_private_looks_up_or_gives_none():
    assert private("a value", lambda: 42) == 42

    def missing():
        raise AttributeError("no such thing in this TensorFlow")

    assert private("a missing call", missing) is None
