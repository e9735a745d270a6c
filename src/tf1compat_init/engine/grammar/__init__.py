# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The assignment-map grammar: rules, rule kinds, the name index and :class:`AssignmentMap`. Pure."""
