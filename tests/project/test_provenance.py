"""Provenance: every module says whether it is derived from tensorflow-estimator or our own.

About a third of ``estimator/`` follows tensorflow-estimator 2.15.0's code closely. Apache-2.0
(section 4) asks that such files keep the upstream copyright notice and carry a prominent
notice of the change; ``NOTICE`` lists them. The rules (docs/development.md#provenance):

- an original module starts with the line ``OWN_HEADER``;
- a derived module starts with the upstream copyright line, then the Apache-2.0 header, then
  ``Modified from `tensorflow_estimator/python/estimator/<file>` (v2.15.0)`` (one or more
  files, joined by "and") and a ``Changes:`` paragraph.

The upstream file names are checked against tensorflow-estimator 2.15.0's file list, embedded
below (from its wheel's RECORD), so this test needs no TensorFlow.
"""

from __future__ import annotations

import hashlib
import pathlib
import re
import tomllib

import pytest

import tf1compat_init

pytestmark = pytest.mark.pure

PACKAGE = pathlib.Path(tf1compat_init.__file__).parent
REPO = PACKAGE.parent.parent
OWN_HEADER = "# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0"
UPSTREAM_PREFIX = "tensorflow_estimator/python/estimator/"

#: The .py files of tensorflow-estimator 2.15.0 under ``tensorflow_estimator/python/estimator/``.
UPSTREAM_FILES = frozenset(
    {
        "__init__.py",
        "api/__init__.py",
        "api/_v1/__init__.py",
        "api/_v1/estimator/__init__.py",
        "api/_v1/estimator/experimental/__init__.py",
        "api/_v1/estimator/export/__init__.py",
        "api/_v1/estimator/inputs/__init__.py",
        "api/_v1/estimator/tpu/__init__.py",
        "api/_v1/estimator/tpu/experimental/__init__.py",
        "api/_v1/v1.py",
        "api/_v2/__init__.py",
        "api/_v2/estimator/__init__.py",
        "api/_v2/estimator/experimental/__init__.py",
        "api/_v2/estimator/export/__init__.py",
        "api/_v2/estimator/inputs/__init__.py",
        "api/_v2/v2.py",
        "canned/__init__.py",
        "canned/baseline.py",
        "canned/dnn.py",
        "canned/dnn_linear_combined.py",
        "canned/dnn_testing_utils.py",
        "canned/head.py",
        "canned/kmeans.py",
        "canned/linear.py",
        "canned/linear_optimizer/__init__.py",
        "canned/linear_optimizer/python/__init__.py",
        "canned/linear_optimizer/python/utils/__init__.py",
        "canned/linear_optimizer/python/utils/sdca_ops.py",
        "canned/linear_optimizer/python/utils/sharded_mutable_dense_hashtable.py",
        "canned/linear_testing_utils.py",
        "canned/metric_keys.py",
        "canned/optimizers.py",
        "canned/parsing_utils.py",
        "canned/prediction_keys.py",
        "canned/rnn.py",
        "canned/saved_model_estimator.py",
        "canned/timeseries/__init__.py",
        "canned/timeseries/ar_model.py",
        "canned/timeseries/estimators.py",
        "canned/timeseries/feature_keys.py",
        "canned/timeseries/head.py",
        "canned/timeseries/math_utils.py",
        "canned/timeseries/model.py",
        "canned/timeseries/model_utils.py",
        "canned/timeseries/saved_model_utils.py",
        "canned/timeseries/state_management.py",
        "canned/v1/__init__.py",
        "canned/v1/dnn_testing_utils_v1.py",
        "canned/v1/linear_testing_utils_v1.py",
        "early_stopping.py",
        "estimator.py",
        "estimator_export.py",
        "estimator_lib.py",
        "export/__init__.py",
        "export/export.py",
        "export/export_lib.py",
        "export/export_output.py",
        "export/function.py",
        "exporter.py",
        "extenders.py",
        "gc.py",
        "head/__init__.py",
        "head/base_head.py",
        "head/binary_class_head.py",
        "head/head_utils.py",
        "head/multi_class_head.py",
        "head/multi_head.py",
        "head/multi_label_head.py",
        "head/regression_head.py",
        "head/sequential_head.py",
        "hooks/__init__.py",
        "hooks/basic_session_run_hooks.py",
        "hooks/fake_summary_writer.py",
        "hooks/hooks.py",
        "hooks/session_run_hook.py",
        "inputs/__init__.py",
        "inputs/inputs.py",
        "inputs/numpy_io.py",
        "inputs/pandas_io.py",
        "inputs/queues/__init__.py",
        "inputs/queues/feeding_functions.py",
        "inputs/queues/feeding_queue_runner.py",
        "keras_lib.py",
        "mode_keys.py",
        "model_fn.py",
        "run_config.py",
        "tools/__init__.py",
        "tools/analytics.py",
        "tools/checkpoint_converter.py",
        "tpu/__init__.py",
        "tpu/_tpu_estimator_embedding.py",
        "tpu/error_handling.py",
        "tpu/iteration_count_estimator.py",
        "tpu/tpu_config.py",
        "tpu/tpu_context.py",
        "tpu/tpu_estimator.py",
        "tpu/util.py",
        "training.py",
        "util.py",
    }
)

_COPYRIGHT = re.compile(r"# Copyright (20\d\d) The TensorFlow Authors\. All Rights Reserved\.")
_APACHE_HEADER = """#
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
# ==============================================================================""".splitlines()
_MODIFIED = re.compile(r"Modified from ((?:`[^`]+`(?: and )?)+) \(v2\.15\.0\)")
#: SHA-256 of the Apache License 2.0 text as apache.org publishes it (LICENSE-2.0.txt).
_APACHE_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


def provenance(text: str, where: str) -> tuple[str, ...]:
    """The upstream files a module's header names, ``()`` for our own; ValueError if neither."""
    lines = text.splitlines()
    if lines and lines[0] == OWN_HEADER:
        return ()
    if not lines or not _COPYRIGHT.fullmatch(lines[0]):
        raise ValueError(
            f"{where}: declares no provenance. Start it with the line {OWN_HEADER!r} (our own "
            "code) or, where it follows upstream code, with the upstream copyright line, the "
            "Apache-2.0 header and a 'Modified from' note (docs/development.md#provenance)."
        )
    n = len(_APACHE_HEADER)
    if lines[1 : 1 + n] != _APACHE_HEADER:
        raise ValueError(
            f"{where}: the Apache-2.0 header after the copyright line is not the standard one"
        )
    comment = []
    for line in lines[1 + n :]:
        if not line.startswith("#"):
            break
        comment.append(line.lstrip("# "))
    note = " ".join(comment)
    match = _MODIFIED.search(note)
    if match is None:
        raise ValueError(
            f"{where}: a derived header needs 'Modified from `{UPSTREAM_PREFIX}<file>` (v2.15.0)'"
        )
    files = tuple(re.findall(r"`([^`]+)`", match.group(1)))
    for name in files:
        rel = name.removeprefix(UPSTREAM_PREFIX)
        if not name.startswith(UPSTREAM_PREFIX) or rel not in UPSTREAM_FILES:
            raise ValueError(
                f"{where}: names {name!r}, which is not a file of tensorflow-estimator 2.15.0"
            )
    if not re.search(r"Changes: \S", note[match.end() :]):
        raise ValueError(f"{where}: a derived header says what changed, in a 'Changes:' note")
    return tuple(name.removeprefix(UPSTREAM_PREFIX) for name in files)


def _modules() -> list[pathlib.Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _derived() -> dict[str, tuple[str, ...]]:
    out = {}
    for path in _modules():
        rel = path.relative_to(PACKAGE).as_posix()
        files = provenance(path.read_text(encoding="utf-8"), rel)
        if files:
            out[rel] = files
    return out


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_every_module_declares_its_provenance(path):
    provenance(path.read_text(encoding="utf-8"), path.relative_to(PACKAGE).as_posix())


def _derived_text(names: str) -> str:
    return "\n".join(
        [
            "# Copyright 2017 The TensorFlow Authors. All Rights Reserved.",
            *_APACHE_HEADER,
            f"# Modified from {names} (v2.15.0) for tf1compat_init.",
            "# Changes: type hints.",
            '"""Doc."""',
        ]
    )


def test_a_module_that_declares_neither_fails():
    with pytest.raises(ValueError, match="x.py: declares no provenance"):
        provenance('"""A module."""\nimport os\n', "x.py")
    with pytest.raises(ValueError, match="declares no provenance"):
        provenance("", "empty.py")


def test_a_derived_header_must_name_a_real_upstream_file():
    ok = _derived_text("`tensorflow_estimator/python/estimator/canned/dnn.py`")
    assert provenance(ok, "ok.py") == ("canned/dnn.py",)
    two = "`tensorflow_estimator/python/estimator/estimator.py` and\n# `tensorflow_estimator/python/estimator/util.py`"
    assert provenance(_derived_text(two), "two.py") == ("estimator.py", "util.py")
    with pytest.raises(ValueError, match="canned/dnn_v3.py'?, which is not a file"):
        provenance(
            _derived_text("`tensorflow_estimator/python/estimator/canned/dnn_v3.py`"), "y.py"
        )
    with pytest.raises(ValueError, match="which is not a file"):
        provenance(_derived_text("`tensorflow/python/training/saver.py`"), "z.py")


def test_a_derived_header_needs_the_license_the_note_and_the_changes():
    text = _derived_text("`tensorflow_estimator/python/estimator/canned/dnn.py`")
    with pytest.raises(ValueError, match="Apache-2.0 header"):
        provenance(text.replace("limitations under the License.", "limitations."), "a.py")
    with pytest.raises(ValueError, match="Modified from"):
        provenance(text.replace("(v2.15.0)", "(v2.14.0)"), "b.py")
    with pytest.raises(ValueError, match="Changes:"):
        provenance(text.replace("# Changes: type hints.", ""), "c.py")


def test_notice_lists_exactly_the_derived_modules():
    listed = {}
    for line in (REPO / "NOTICE").read_text(encoding="utf-8").splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[0].endswith(".py"):
            listed[parts[0]] = tuple(f.strip() for f in parts[1].split(","))
    assert listed == _derived()


def test_the_estimator_is_partly_derived_and_the_engine_is_not():
    derived = _derived()
    assert any(rel.startswith("estimator/") for rel in derived)
    assert all(rel.startswith("estimator/") for rel in derived), sorted(derived)


def test_license_is_apache_2_and_the_package_says_so():
    license_bytes = (REPO / "LICENSE").read_bytes()
    assert hashlib.sha256(license_bytes).hexdigest() == _APACHE_SHA256
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["license"] == "Apache-2.0"
    assert project["project"]["license-files"] == ["LICENSE", "NOTICE"]
    # license expressions need setuptools >= 77; older ones warn about the table form or fail.
    assert "setuptools>=77" in project["build-system"]["requires"]
