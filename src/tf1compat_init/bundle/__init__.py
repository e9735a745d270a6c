"""TensorFlow's tensor-bundle format, natively: no TensorFlow, no protobuf runtime.

The engine's door to it is :mod:`tf1compat_init.reader` (``open_checkpoint``); nothing here
is public API. What each module holds:

- :mod:`.reader`: :class:`~.reader.BundleReader`, which opens an index and reads tensors.
- :mod:`.table`: the LevelDB-style table of the ``.index`` file.
- :mod:`.entries`: its records (``BundleHeaderProto``, ``BundleEntryProto``);
  :mod:`.objects`: the object graph of a ``tf.train.Checkpoint``.
- :mod:`.proto`: a general protobuf wire-format decoder; :mod:`.proto_fast`: inline
  decoders for the two messages a checkpoint holds thousands of.
- :mod:`.crc`: CRC32C, with the ctypes loader of ``google-crc32c``'s C library.
- :mod:`.dtypes`: TensorFlow's dtype enum and numpy dtypes; :mod:`.slice_keys`: the
  OrderedCode keys of a partitioned tensor's slices.
- :mod:`.fastread`: the bulk read path (memory-mapped shards, checksums in threads).
- :mod:`.writer`: writes a bundle (``tf1compat-init migrate``, tests, benchmarks).
- :mod:`.storage`: paths that are URLs (``gs://``, ``ram://``...), through ``tf.io.gfile``
  (TensorFlow imported for URLs only), every call under a timeout.
- :mod:`.remote`: the bulk read path for URLs (ranged reads, checksums, bounded read-ahead).

Decoding: hand-written, no ``protobuf`` (decided on measurements, issue 16). On this
shared 2-core machine, medians of interleaved runs (``benchmarks/entry_decode.py``,
``plan_scaling.py``, ``cli_startup.py``): one ``BundleEntryProto`` decodes in 4.1 µs with
:func:`.proto_fast.entry_fields`, 4.0 µs with upb ``protobuf`` 7.36 (12.7 µs with the
general decoder); importing ``google.protobuf`` in a fresh process costs 48 ms (15 -> 64
ms), against ``inspect`` of 2,000 variables at 430 ms and ``plan`` at 570 ms in all, and
``open_checkpoint`` of 100k entries at 750 ms. So protobuf would decode no faster, add
10-15% to CLI start-up, and make a dependency (and a runtime version: 4.25 under TF 2.15,
7.x under TF 2.21) of what is now numpy alone; the hand-written decoder stays, and
:mod:`.writer` encodes the same fields by hand. Per message there is one decoder; only
the two hot ones (``BundleEntryProto``, ``TrackableObject``) have an inline fast path for
the layout TensorFlow writes, which answers None for anything else (slices, slot
variables, negative or long varints, unknown fields, bad bytes); the field-walking
decoder then decodes it or names what is wrong. That remainder is kept on purpose: it
is the one place that handles partitioned tensors and malformed indexes, and the fast
path alone is three times faster on the keys that make up every index.

This package imports nothing from its parent except :mod:`tf1compat_init.errors` and the
garbage-collector pause, so the engine can use it without an import cycle.
"""
