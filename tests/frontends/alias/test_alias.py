"""``tf1compat_init.estimator.install()``: tf.estimator and tensorflow-estimator's import paths.

Every check runs in a fresh Python process (the alias changes ``sys.modules`` and
``tensorflow``'s modules): the snippet prints JSON, the test asserts on it. On TF 2.21
the alias is what makes ``tf.estimator`` exist; on TF 2.15 ``install()`` is a no-op unless
``force=True``, and the names it serves are checked against the real modules.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.processes import run_py


@pytest.mark.pure
def test_upstream_names_cover_every_private_module_offered():
    from tf1compat_init.alias import _modules

    names = _modules.upstream_names()
    assert {"canned.head", "early_stopping", "canned.optimizers", "keras_lib"} <= set(names)
    assert "_Head" in names["canned.head"]
    assert "read_eval_metrics" in names["early_stopping"]
    assert _modules.is_known("tensorflow_estimator.python.estimator.canned.head")
    assert _modules.is_known("tensorflow.python.estimator.hooks.session_run_hook")
    assert not _modules.is_known("tensorflow_estimator.python.estimator.tpu.tpu_embedding")
    assert _modules.whole_target("tensorflow.compat.v1.estimator.tpu") == (
        "tf1compat_init.estimator.v1.tpu"
    )


@pytest.mark.pure
def test_importing_the_alias_imports_no_tensorflow():
    out = run_py(
        """
        import json, sys
        import tf1compat_init.alias as alias
        print(json.dumps({"tf": "tensorflow" in sys.modules, "installed": alias.installed()}))
        """
    )
    assert out == {"tf": False, "installed": False}


@pytest.mark.tf221
def test_nothing_is_patched_without_install():
    out = run_py(
        """
        import json, importlib.util
        import tensorflow as tf
        import tf1compat_init, tf1compat_init.estimator, tf1compat_init.v1
        try:
            import tensorflow_estimator
            te = True
        except ImportError:
            te = False
        print(json.dumps({"tf.estimator": hasattr(tf, "estimator"),
                          "v1": hasattr(tf.compat.v1, "estimator"), "te": te}))
        """
    )
    assert out == {"tf.estimator": False, "v1": False, "te": False}


@pytest.mark.tf221
def test_after_install_every_path_is_the_librarys():
    out = run_py(
        """
        import json, sys
        import tensorflow as tf
        import tf1compat_init.estimator as E
        from tf1compat_init.estimator import v1 as V1
        first, second = E.install(), E.install()
        checks = {
            "tf.estimator": tf.estimator is E,
            "compat.v2": tf.compat.v2.estimator is E,
            "compat.v1": tf.compat.v1.estimator is V1,
        }
        import tensorflow.estimator as a
        from tensorflow import estimator as b
        from tensorflow.compat.v1 import estimator as c
        import tensorflow.compat.v1 as tf1
        import tensorflow_estimator
        checks.update(import_as=a is E, from_tf=b is E, from_v1=c is V1, tf1=tf1.estimator is V1,
                      te=tensorflow_estimator.estimator is V1)
        from tensorflow_estimator.python.estimator.canned import head, optimizers
        from tensorflow_estimator.python.estimator.early_stopping import read_eval_metrics
        from tensorflow.python.estimator.canned.head import _Head
        from tensorflow_estimator.python.estimator.hooks import session_run_hook
        from tensorflow_estimator.python.estimator.canned import dnn
        from tensorflow_estimator.python.estimator import estimator as est_mod
        from tensorflow_estimator.python.estimator.api._v1 import estimator as api_v1
        from tensorflow_estimator.python.estimator.api._v2 import estimator as api_v2
        from tf1compat_init.estimator import _early_stopping
        from tf1compat_init.estimator.canned import _optimizers
        checks.update(
            head=head._Head is _Head and _Head.__module__.startswith("tf1compat_init."),
            optimizers=optimizers.get_optimizer_instance is _optimizers.get_optimizer_instance,
            read_eval_metrics=read_eval_metrics is _early_stopping.read_eval_metrics,
            hook=session_run_hook.SessionRunHook is tf.compat.v1.train.SessionRunHook,
            dnn_v1=dnn.DNNClassifier is V1.DNNClassifier,
            dnn_v2=dnn.DNNClassifierV2 is E.DNNClassifier,
            est_v1=est_mod.Estimator is V1.Estimator,
            est_v2=est_mod.EstimatorV2 is E.Estimator,
            api=(api_v1 is V1, api_v2 is E) == (True, True),
            hasattr_missing=not hasattr(est_mod, "_load_global_step_from_checkpoint_dir"),
        )
        errors = {}
        try:
            est_mod._load_global_step_from_checkpoint_dir
        except AttributeError as e:
            errors["attr"] = [type(e).__name__, str(e)]
        try:
            from tensorflow_estimator.python.estimator.estimator import (
                _load_global_step_from_checkpoint_dir)
        except ImportError as e:
            errors["from"] = str(e)
        try:
            import tensorflow_estimator.python.estimator.tpu.tpu_embedding
        except ModuleNotFoundError as e:
            errors["module"] = [e.name, str(e)]
        print(json.dumps({"first": first, "second": second, "checks": checks,
                          "errors": errors}))
        """
    )
    assert (out["first"], out["second"]) == (True, False)
    assert {k for k, v in out["checks"].items() if not v} == set()
    name = "tensorflow_estimator.python.estimator.estimator._load_global_step_from_checkpoint_dir"
    assert out["errors"]["attr"][0] == "NotProvidedError"
    assert (
        name in out["errors"]["attr"][1]
        and "not provided by tf1compat_init" in (out["errors"]["attr"][1])
    )
    assert "_load_global_step_from_checkpoint_dir" in out["errors"]["from"]
    assert "not provided" in out["errors"]["from"]
    module = "tensorflow_estimator.python.estimator.tpu.tpu_embedding"
    assert out["errors"]["module"][0] == module
    assert module in out["errors"]["module"][1]
    assert "does not provide this module" in out["errors"]["module"][1]


@pytest.mark.tf221
def test_install_before_tensorflow_imports_nothing_and_uninstall_restores():
    out = run_py(
        """
        import json, sys
        from tf1compat_init.alias import install, uninstall
        install()
        before = sorted(m for m in sys.modules if m.startswith(("tensorflow", "tf1compat_init.estim")))
        import tensorflow as tf
        lazy = "tf1compat_init.estimator" not in sys.modules
        ours = tf.estimator.__name__
        import tensorflow.compat.v1 as tf1
        v1 = tf1.estimator.__name__
        removed = uninstall()
        after = {"tf": hasattr(tf, "estimator"), "tf1": hasattr(tf1, "estimator"),
                 "v2": hasattr(tf.compat.v2, "estimator")}
        try:
            import tensorflow_estimator
            te = True
        except ImportError:
            te = False
        try:
            from tensorflow import estimator
            from_tf = True
        except ImportError:
            from_tf = False
        print(json.dumps({"before": before, "lazy": lazy, "ours": ours, "v1": v1,
                          "removed": removed, "after": after, "te": te, "from_tf": from_tf,
                          "again": uninstall()}))
        """
    )
    assert out["before"] == []
    assert out["lazy"] is True
    assert (out["ours"], out["v1"]) == ("tf1compat_init.estimator", "tf1compat_init.estimator.v1")
    assert out["removed"] is True and out["again"] is False
    assert out["after"] == {"tf": False, "tf1": False, "v2": False}
    assert (out["te"], out["from_tf"]) == (False, False)


@pytest.mark.tf221
def test_install_wins_over_a_broken_tensorflow_estimator(tmp_path):
    fake = tmp_path / "tensorflow_estimator"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "raise ImportError(\"cannot import name 'estimator_training' from "
        "'tensorflow.python.distribute'\")\n"
    )
    out = run_py(
        """
        import json
        try:
            import tensorflow_estimator
            broken = False
        except ImportError:
            broken = True
        import tf1compat_init.estimator as E
        E.install()
        import tensorflow_estimator
        from tensorflow_estimator.python.estimator import early_stopping
        print(json.dumps({"broken": broken, "ours": tensorflow_estimator.estimator is E.v1,
                          "fn": early_stopping.read_eval_metrics.__module__}))
        """,
        path=[str(tmp_path)],
    )
    assert out["broken"] and out["ours"]
    assert out["fn"].startswith("tf1compat_init.estimator")


@pytest.mark.tf221
def test_install_from_many_threads_installs_once():
    out = run_py(
        """
        import json, threading
        import tensorflow as tf
        from tf1compat_init.estimator import install
        results, barrier = [], threading.Barrier(8)
        def go():
            barrier.wait()
            results.append(install())
        threads = [threading.Thread(target=go) for _ in range(8)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        print(json.dumps({"results": sorted(results), "ok": tf.estimator.__name__}))
        """
    )
    assert out["results"] == [False] * 7 + [True]
    assert out["ok"] == "tf1compat_init.estimator"


@pytest.mark.tf221
def test_every_private_name_is_an_object_or_says_not_provided():
    out = run_py(
        """
        import json, importlib
        import tensorflow as tf
        from tf1compat_init.alias import install, NotProvidedError
        from tf1compat_init.alias import _modules
        install()
        provided, missing, bad = 0, 0, []
        for rel, names in sorted(_modules.upstream_names().items()):
            for root in _modules.PRIVATE_ROOTS:
                module = importlib.import_module(f"{root}.{rel}")
                for name in sorted(names):
                    try:
                        value = getattr(module, name)
                    except NotProvidedError as e:
                        missing += 1
                        if f"{root}.{rel}.{name}" not in str(e):
                            bad.append(name)
                        continue
                    provided += 1
                    if value is None:
                        bad.append(f"{rel}.{name}")
        print(json.dumps({"provided": provided, "missing": missing, "bad": bad}))
        """
    )
    assert out["bad"] == []
    # Both roots serve the same objects; the count is what docs/cannot-edit.md reports.
    assert out["provided"] >= 2 * 150, out


@pytest.mark.tf215
def test_on_tf215_install_changes_nothing_unless_forced():
    out = run_py(
        """
        import json, logging
        import tensorflow as tf
        real = tf.estimator
        records = []
        class H(logging.Handler):
            def emit(self, r): records.append(r.getMessage())
        logging.getLogger("tf1compat_init").addHandler(H())
        logging.getLogger("tf1compat_init").setLevel(logging.INFO)
        import tf1compat_init.estimator as E
        plain = E.install()
        same = tf.estimator is real
        forced = E.install(force=True)
        ours = tf.estimator is E and tf.compat.v1.estimator is E.v1
        from tensorflow_estimator.python.estimator.canned import head
        ours_head = head._Head.__module__
        E.uninstall()
        import tensorflow_estimator.python.estimator.canned.head as real_head
        print(json.dumps({"plain": plain, "same": same, "forced": forced, "ours": ours,
                          "ours_head": ours_head, "back": tf.estimator is real,
                          "real_head": real_head._Head.__module__, "log": records}))
        """
    )
    assert out["plain"] is False and out["same"] is True
    assert any("not needed" in r for r in out["log"])
    assert out["forced"] is True and out["ours"] is True
    assert out["ours_head"].startswith("tf1compat_init.")
    assert out["back"] is True
    assert out["real_head"].startswith("tensorflow_estimator.")


@pytest.mark.tf215
def test_upstream_names_file_matches_tensorflow_estimator_2_15():
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
    import importlib

    import estimator_private_names as gen

    from tf1compat_init.alias import _modules

    for rel, names in _modules.upstream_names().items():
        module = importlib.import_module(f"{gen.PREFIX}{rel}")
        assert set(gen.names(module)) == names, rel


@pytest.mark.tf215
def test_served_names_are_the_same_kind_of_object_as_the_real_ones():
    """Classes for classes, functions for functions, the v1/v2 Estimator split kept."""
    out = run_py(
        """
        import json, importlib, inspect
        import tensorflow as tf
        from tf1compat_init.alias import _modules
        from tf1compat_init.estimator import compat_paths
        import tf1compat_init.estimator as E
        real_est = importlib.import_module("tensorflow_estimator.python.estimator.estimator")
        wrong = []
        served = 0
        for rel, names in sorted(_modules.upstream_names().items()):
            real = importlib.import_module(f"tensorflow_estimator.python.estimator.{rel}")
            for name in sorted(names):
                try:
                    ours = compat_paths.resolve(rel, name, names)
                except KeyError:
                    continue
                served += 1
                theirs = getattr(real, name)
                if isinstance(theirs, type) != isinstance(ours, type):
                    wrong.append(f"{rel}.{name}: class?")
                elif callable(theirs) != callable(ours):
                    wrong.append(f"{rel}.{name}: callable?")
                elif isinstance(theirs, type) and issubclass(theirs, real_est.Estimator):
                    v1 = issubclass(ours, E.v1.Estimator)
                    if v1 != (not issubclass(theirs, real_est.EstimatorV2)):
                        wrong.append(f"{rel}.{name}: v1/v2")
        print(json.dumps({"wrong": wrong, "served": served}))
        """
    )
    assert out["wrong"] == []
    assert out["served"] >= 150
