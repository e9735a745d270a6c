# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The engine: what every front end builds on (it imports no front end).

Subpackages by job; ``basics``, ``grammar``, ``planning`` and ``reading`` import no
TensorFlow or Keras, ``targets`` is the engine's TensorFlow side."""
