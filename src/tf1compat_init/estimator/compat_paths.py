# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Where tensorflow-estimator 2.15's private module paths find the library's objects.

Third-party code imports ``tensorflow_estimator.python.estimator.canned.head._Head``,
``...early_stopping.read_eval_metrics``, ``tensorflow.python.estimator.canned.optimizers``
and the like. After :func:`tf1compat_init.estimator.install`, each such module is an alias
whose names resolve, on first use, to this library's own objects: :data:`MODULES` lists,
per private module (relative to ``tensorflow_estimator.python.estimator``), the library
modules searched in order for a name that module held in 2.15 (the names are
``tf1compat_init/alias/upstream_names.json``, written from the 2.15 wheel). A name that
none of them holds is not provided: the alias raises an error that says so.

One rule: in a module that held both ``X`` and ``XV2`` (``DNNClassifier`` and
``DNNClassifierV2``), ``X`` is the v1 class (:mod:`tf1compat_init.estimator.v1`) and
``XV2`` is ``tf.estimator``'s (:mod:`tf1compat_init.estimator`), as in 2.15.

Whole modules (``tf.estimator``, ``...api._v1.estimator``) are whole library modules:
``tf1compat_init.alias._modules.WHOLE``.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["MODULES", "RENAMED", "resolve"]

_E = "tf1compat_init.estimator"
_V1 = f"{_E}.v1"

_CANNED = {
    "canned.baseline": "_baseline",
    "canned.dnn": "_dnn",
    "canned.dnn_linear_combined": "_dnn_linear",
    "canned.linear": "_linear",
}
_HEADS = {
    "head.binary_class_head": "_binary",
    "head.multi_class_head": "_multi_class",
    "head.multi_head": "_multi_head",
    "head.multi_label_head": "_multi_label",
    "head.regression_head": "_regression",
    "head.sequential_head": "_sequential",
}

#: ``{private module: library modules searched, in order}``.
MODULES: dict[str, tuple[str, ...]] = {
    "estimator": (f"{_V1}._estimator", _V1, _E),
    "model_fn": (f"{_E}._spec", f"{_E}._fn_calls", f"{_E}.canned._logit_fn"),
    "mode_keys": (f"{_E}._spec",),
    "run_config": (f"{_E}._config",),
    "early_stopping": (f"{_E}._early_stopping",),
    "training": (f"{_E}._train_and_evaluate", _E),
    "exporter": (f"{_E}._exporter",),
    "extenders": (f"{_E}._extenders",),
    "util": (f"{_E}._fn_calls",),
    "keras_lib": (f"{_E}._keras_lib",),
    "export": (f"{_E}.export",),
    "export.export": (f"{_E}._receiver", f"{_E}.export"),
    "export.export_lib": (f"{_E}.export", f"{_E}._receiver"),
    "export.export_output": (f"{_E}._export_output", f"{_E}.export"),
    "canned": (),
    "canned.head": (f"{_V1}._head",),
    "canned.optimizers": (f"{_E}.canned._optimizers",),
    "canned.metric_keys": (f"{_E}.head._keys",),
    "canned.prediction_keys": (f"{_E}.head._keys",),
    "canned.parsing_utils": (f"{_E}.canned._parsing", _E),
    **{rel: (f"{_V1}.{mod}", f"{_E}.canned.{mod}") for rel, mod in _CANNED.items()},
    "head": (f"{_E}.head",),
    "head.base_head": (f"{_E}.head._base", f"{_E}.head._checks", f"{_E}.head._train_checks"),
    "head.head_utils": (f"{_E}.canned._head_utils",),
    **{rel: (f"{_E}.head.{mod}", f"{_E}.head") for rel, mod in _HEADS.items()},
    "hooks": (),
    "hooks.hooks": (f"{_E}._in_memory_eval", f"{_E}._early_stopping"),
    "hooks.session_run_hook": (_E,),
    "hooks.basic_session_run_hooks": (_E,),
    "inputs": (f"{_V1}.inputs",),
    "inputs.inputs": (f"{_V1}.inputs",),
    "inputs.numpy_io": (f"{_V1}._numpy_io",),
    "inputs.pandas_io": (f"{_V1}._pandas_io",),
    "tpu": (),
    "tpu.tpu_config": (f"{_V1}.tpu._config", f"{_V1}.tpu"),
    "tpu.tpu_estimator": (f"{_V1}.tpu._estimator", f"{_V1}.tpu._spec", f"{_V1}.tpu"),
}

#: Objects 2.15 held under another name than the library's, or in another module.
RENAMED: dict[tuple[str, str], tuple[str, str]] = {
    ("run_config", "get_default_session_config"): (f"{_E}._config", "default_session_config"),
    ("canned.linear", "LinearSDCA"): (f"{_E}.experimental", "LinearSDCA"),
    **{
        (rel, "build_raw_supervised_input_receiver_fn"): (
            f"{_E}.experimental",
            "build_raw_supervised_input_receiver_fn",
        )
        for rel in ("export.export", "export.export_lib")
    },
}

_MISSING = object()


def _lookup(module_name: str, name: str) -> Any:
    module = importlib.import_module(module_name)
    try:
        value = getattr(module, name)
    except AttributeError:
        return _MISSING
    if isinstance(value, type(importlib)):
        return _MISSING  # a module ours imported, not an object 2.15 held under this name
    return value


def _candidates(private_module: str, name: str, upstream_names: frozenset[str]) -> list:
    if (private_module, name) in RENAMED:
        return [RENAMED[private_module, name]]
    if name == "ModeKeys":  # imported by most of 2.15's modules: one object
        return [(f"{_E}._spec", name)]
    sources = MODULES[private_module]
    v1 = [s for s in sources if s.startswith(_V1)]
    v2 = [s for s in sources if not s.startswith(_V1)]
    if name.endswith("V2") and name[:-2] in upstream_names:  # XV2: tf.estimator's X
        return [(s, n) for s in [*v2, _E] for n in (name, name[:-2])]
    if f"{name}V2" in upstream_names:  # X beside XV2: the v1 one only
        return [(s, name) for s in [*v1, _V1]]
    return [(s, name) for s in sources]


def resolve(private_module: str, name: str, upstream_names: frozenset[str]) -> Any:
    """The library's object for ``name`` of ``private_module``; ``KeyError`` if none.

    Args:
        private_module: relative to ``tensorflow_estimator.python.estimator``, e.g.
            ``"canned.head"``.
        name: a name that module held in tensorflow-estimator 2.15.
        upstream_names: every name it held (for the ``X`` / ``XV2`` rule).
    """
    for source, attr in _candidates(private_module, name, upstream_names):
        value = _lookup(source, attr)
        if value is not _MISSING:
            return value
    raise KeyError(name)
