# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
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

Decoding: hand-written, no ``protobuf`` (issue 16), and one
decoder per message. The two messages a checkpoint holds thousands of, ``BundleEntryProto``
(:func:`.entries.parse_entry`) and ``TrackableObject`` (:mod:`.objects`), are walked in
line for the layout TensorFlow writes; anything else (longer tags, long or negative
varints, unknown fields, slices, slot variables, bad bytes) goes through the primitives
of :mod:`.proto` in the same walk, which skip what is unknown and name what is
malformed. Messages read once (the header, slices) walk :func:`.proto.iter_fields`.
``tests/bundle/test_bundle_protobuf.py`` holds them to ``protobuf``'s own parser on random
valid, truncated and corrupt messages.

The hand-written decoders were chosen over ``protobuf`` on measurements (decoding speed,
CLI start-up, one dependency less); they are in ``benchmarks/README.md``.

This package imports nothing from its parent except :mod:`tf1compat_init.errors` and the
garbage-collector pause, so the engine can use it without an import cycle.
"""
