"""TensorFlow's tensor-bundle format, natively: no TensorFlow, no protobuf runtime.

The engine's door to it is :mod:`tf1compat_init.reader` (``open_checkpoint``); nothing here
is public API. What each module holds:

- :mod:`.reader`: the index (a LevelDB-style table of ``BundleEntryProto``), CRC32C,
  dtypes, the object graph, and :class:`~.reader.BundleReader`, which reads tensors.
- :mod:`.proto`: a general protobuf wire-format decoder; :mod:`.proto_fast`: inline
  decoders for the two messages a checkpoint holds thousands of.
- :mod:`.fastread`: the bulk read path (memory-mapped shards, checksums in threads).
- :mod:`.writer`: writes a bundle (``tf1compat-init migrate``, tests, benchmarks).
- :mod:`.storage`: paths that are URLs (``gs://``, ``ram://``...), through ``tf.io.gfile``
  (TensorFlow imported for URLs only), every call under a timeout.
- :mod:`.remote`: the bulk read path for URLs (ranged reads, checksums, bounded read-ahead).

This package imports nothing from its parent except :mod:`tf1compat_init.errors` and the
garbage-collector pause, so the engine can use it without an import cycle.
"""
