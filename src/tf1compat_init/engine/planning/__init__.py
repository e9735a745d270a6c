# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Planning a restore: the policy, the plan, the report, recipes' planning and the front ends' shared preamble. Pure."""
