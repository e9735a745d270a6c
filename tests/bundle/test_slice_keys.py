"""tf1compat_init.bundle.slice_keys: the index keys of a partitioned variable's slices."""

from __future__ import annotations

import pytest

from tf1compat_init.bundle import slice_keys as _slice_keys
from tf1compat_init.bundle.slice_keys import encode_tensor_name_slice


@pytest.mark.pure
def test_ordered_code_signed_numbers():
    enc = _slice_keys._oc_signed_num_increasing
    # The two worked examples in TensorFlow's ordered_code.cc.
    assert enc(0x424242) == bytes.fromhex("f0424242")
    assert enc(-0x800) == bytes.fromhex("3800")
    assert (
        enc(0) == b"\x80" and enc(-1) == b"\x7f" and enc(63) == b"\xbf" and enc(64) == b"\xc0\x40"
    )
    assert len(enc(2**63 - 1)) == 10 and len(enc(-(2**63))) == 10
    # The encoding is order preserving (its purpose), over every length.
    values = sorted(
        {s * (2**k + d) for k in range(63) for d in (-1, 0, 1) for s in (1, -1)} | {0, 2**63 - 1}
    )
    values = [v for v in values if -(2**63) <= v < 2**63]
    encoded = [enc(v) for v in values]
    assert encoded == sorted(encoded)
    assert len(set(encoded)) == len(encoded)


@pytest.mark.pure
def test_encode_tensor_name_slice_layout():
    key = encode_tensor_name_slice(b"a\x00b\xff", [(0, -1), (2, 3)])
    assert key == b"\x00" + b"a\x00\xffb\xff\x00\x00\x01" + b"\x01\x02" + b"\x80\x7f" + b"\x82\x83"
