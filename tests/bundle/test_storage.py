"""tf1compat_init.bundle.storage: which paths are URLs, and the remote-call timeout setting.

Reads and writes through ``tf.io.gfile`` (``ram://``) are tested in test_remote.py.
"""

from __future__ import annotations

import pytest

from tf1compat_init.bundle import storage

pytestmark = pytest.mark.pure


@pytest.mark.parametrize(
    "path, url",
    [
        ("gs://bucket/model.ckpt", True),
        ("ram://x/y", True),
        ("file:///tmp/a", True),
        ("hdfs+ha://n/p", True),
        ("/tmp/model.ckpt", False),
        ("relative/dir", False),
        ("C:\\models\\ckpt", False),
        ("://no-scheme", False),
        ("1gs://starts-with-a-digit", False),
        ("dir/with://inside", False),
    ],
)
def test_is_url(path, url):
    assert storage.is_url(path) is url


@pytest.mark.parametrize(
    "raw, seconds",
    [
        (None, storage.DEFAULT_TIMEOUT),
        ("", storage.DEFAULT_TIMEOUT),
        ("  ", storage.DEFAULT_TIMEOUT),
        ("120", 120.0),
        ("0.5", 0.5),
        ("0", None),
        ("none", None),
        ("OFF", None),
    ],
)
def test_timeout_from_the_environment(monkeypatch, raw, seconds):
    if raw is None:
        monkeypatch.delenv(storage.TIMEOUT_ENV, raising=False)
    else:
        monkeypatch.setenv(storage.TIMEOUT_ENV, raw)
    assert storage.timeout() == seconds


@pytest.mark.parametrize("raw", ["-1", "soon", "nan", "inf", "1e999"])
def test_a_bad_timeout_names_the_variable_and_the_fix(monkeypatch, raw):
    monkeypatch.setenv(storage.TIMEOUT_ENV, raw)
    with pytest.raises(ValueError, match=f"TF1COMPAT_REMOTE_TIMEOUT='{raw}'.*positive"):
        storage.timeout()
