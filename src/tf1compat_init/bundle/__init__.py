"""TensorFlow's tensor-bundle format, natively: no TensorFlow, no protobuf runtime.

The engine's door to it is :mod:`tf1compat_init.reader` (``open_checkpoint``); nothing here
is public API. What each module holds:

- :mod:`.reader`: :class:`~.reader.BundleReader`, which opens an index and reads tensors.
- :mod:`.table`: the LevelDB-style table of the ``.index`` file.
- :mod:`.entries`: its records (``BundleHeaderProto``, ``BundleEntryProto``), decoded;
  :mod:`.objects`: the object graph of a ``tf.train.Checkpoint``, decoded.
- :mod:`.proto`: the protobuf wire format's primitives, which those decoders share.
- :mod:`.crc`: CRC32C and its masking, on the fastest backend installed (``crc32c``,
  ``google-crc32c``, pure Python).
- :mod:`.dtypes`: TensorFlow's dtype enum and numpy dtypes; :mod:`.slice_keys`: the
  OrderedCode keys of a partitioned tensor's slices.
- :mod:`.fastread`: the bulk read path (memory-mapped shards, checksums in threads).
- :mod:`.writer`: writes a bundle (``tf1compat-init migrate``, tests, benchmarks).
- :mod:`.storage`: paths that are URLs (``gs://``, ``ram://``...), through ``tf.io.gfile``
  (TensorFlow imported for URLs only), every call under a timeout.
- :mod:`.remote`: the bulk read path for URLs (ranged reads, checksums, bounded read-ahead).

Decoding: hand-written, no ``protobuf`` (decided on measurements, issue 16), and one
decoder per message. The two messages a checkpoint holds thousands of, ``BundleEntryProto``
(:func:`.entries.parse_entry`) and ``TrackableObject`` (:mod:`.objects`), are walked in
line for the layout TensorFlow writes; anything else (longer tags, long or negative
varints, unknown fields, slices, slot variables, bad bytes) goes through the primitives
of :mod:`.proto` in the same walk, which skip what is unknown and name what is
malformed. Messages read once (the header, slices) walk :func:`.proto.iter_fields`.
``tests/test_bundle_protobuf.py`` holds them to ``protobuf``'s own parser on random
valid, truncated and corrupt messages.

On this shared 2-core machine, medians of interleaved runs (``benchmarks/entry_decode.py``,
``plan_scaling.py``, ``cli_startup.py``): a ``BundleEntryProto`` decodes in 2.4 µs, 2.1 µs
with upb ``protobuf`` 7.36 (2.7 and 2.3 µs with 4.25 under TF 2.15), a ``TrackableObject``
in 4.6 µs against 3.1 µs; ``open_checkpoint`` of 100k entries takes 590-660 ms. These
decoders replaced an inline fast path that handed anything unusual to a second,
field-walking decoder: in one process, alternating, they decode entries 5-9% and object
graphs 12-16% faster, and a ``BundleReader`` opens 100k entries in 480 ms against 505.
Importing ``google.protobuf`` in a fresh process costs 40 ms (13 -> 56 ms), against
``inspect`` of 2,000 variables at 315 ms and ``plan`` at 360 ms in all. So protobuf
would decode about 10% faster (a third faster for object graphs: 3 ms per 2,000
objects), add 40 ms (11-13%) to every CLI start, and make a dependency (and a runtime version:
4.25 under TF 2.15, 7.x under TF 2.21) of what is now numpy alone; the hand-written
decoders stay, and :mod:`.writer` encodes the same fields by hand.

This package imports nothing from its parent except :mod:`tf1compat_init.errors` and the
garbage-collector pause, so the engine can use it without an import cycle.
"""
