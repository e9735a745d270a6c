# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The engine's TensorFlow side: restore targets (variables), initializer values and the vocabulary remap in a graph."""
