# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Small shared pieces: shape text, dtype names, the GC pause, TensorFlow release facts. Pure."""
