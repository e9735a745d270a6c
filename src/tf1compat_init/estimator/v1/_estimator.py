# Copyright 2016 The TensorFlow Authors. All Rights Reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
# ==============================================================================
# Modified from `tensorflow_estimator/python/estimator/estimator.py` (v2.15.0) for tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; only the v1 export_savedmodel.
"""``tf.compat.v1.estimator.Estimator``: the Estimator with TF 1.x's ``export_savedmodel``.

TF 2.15's V2 ``Estimator`` hides ``export_savedmodel``; the v1 one keeps it (deprecated,
``strip_default_attrs=False`` by default), and TF 1.x code exporting a canned estimator
calls it. Everything else is :class:`tf1compat_init.estimator.Estimator`.
"""

from __future__ import annotations

from typing import Any

from .. import Estimator as _EstimatorV2
from .. import _export as _estimator_export
from .._spec import ModeKeys

__all__ = ["Estimator"]


class _V1Methods:
    # A base before the V2 Estimator, not the class body: members defined on a subclass
    # of the Estimator count as overrides, which its constructor refuses (as TF's).
    def export_savedmodel(
        self,
        export_dir_base: Any,
        serving_input_receiver_fn: Any,
        assets_extra: dict | None = None,
        as_text: bool = False,
        checkpoint_path: str | None = None,
        strip_default_attrs: bool = False,
    ) -> bytes:
        """Exports the serving graph as a SavedModel (deprecated alias of ``export_saved_model``).

        As TF 1.x: default attributes are kept unless ``strip_default_attrs``. Returns the
        directory (bytes).
        """
        if not serving_input_receiver_fn:
            raise ValueError("An input_receiver_fn must be defined.")
        return _estimator_export.export_all_saved_models(
            self,
            export_dir_base,
            {ModeKeys.PREDICT: serving_input_receiver_fn},
            assets_extra=assets_extra,
            as_text=as_text,
            checkpoint_path=checkpoint_path,
            strip_default_attrs=strip_default_attrs,
        )


class Estimator(_V1Methods, _EstimatorV2):
    """``tf.compat.v1.estimator.Estimator``: :class:`tf1compat_init.estimator.Estimator`
    plus ``export_savedmodel``. The v1 canned estimators derive from it."""
