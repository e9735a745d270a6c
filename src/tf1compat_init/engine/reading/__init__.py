# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Reading a checkpoint: ``open_checkpoint``, the renamed view and vocabulary remaps (over ``bundle``). Pure."""
