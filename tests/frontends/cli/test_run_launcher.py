"""``tf1compat-init run``: someone else's script, unchanged, with tf.estimator provided.

Each run is a real subprocess of the installed console script (and of
``python -m tf1compat_init``), as a user starts it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[3] / "src")
LAUNCHER = str(Path(sys.executable).parent / "tf1compat-init")


def launch(
    *args: str, cwd: Path | None = None, module: bool = False
) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=SRC, TF_CPP_MIN_LOG_LEVEL="3")
    command = [sys.executable, "-m", "tf1compat_init"] if module else [LAUNCHER]
    return subprocess.run(
        [*command, "run", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


def script(tmp_path: Path, body: str, name: str = "train.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


@pytest.mark.pure
@pytest.mark.parametrize("module", [False, True])
def test_a_missing_script_or_module_is_one_line_and_exit_2(tmp_path, module):
    missing = launch(str(tmp_path / "nope.py"), module=module)
    assert missing.returncode == 2
    assert missing.stderr.count("\n") == 1 and "nope.py" in missing.stderr
    assert "Traceback" not in missing.stderr
    no_module = launch("-m", "no_such_module_here", module=module)
    assert no_module.returncode == 2
    assert no_module.stderr.count("\n") == 1 and "no_such_module_here" in no_module.stderr


@pytest.mark.pure
def test_usage_without_a_script_is_exit_2_and_help_is_exit_0():
    assert launch().returncode == 2
    helped = launch("--help")
    assert helped.returncode == 0 and "run SCRIPT [ARGS...]" in helped.stdout


@pytest.mark.pure
def test_argv_exit_code_and_path_pass_through_as_python_would(tmp_path):
    (tmp_path / "helper_mod.py").write_text("VALUE = 41\n")
    path = script(
        tmp_path,
        """
        import sys, helper_mod
        print(repr(sys.argv), __name__, helper_mod.VALUE + 1)
        sys.exit(7)
        """,
    )
    out = launch(str(path), "--run", "-m", "x", "--help")
    assert out.returncode == 7
    assert out.stdout.strip() == f"{[str(path), '--run', '-m', 'x', '--help']!r} __main__ 42"


@pytest.mark.pure
def test_a_scripts_exception_prints_its_traceback_only_and_exit_1(tmp_path):
    path = script(
        tmp_path,
        """
        def fail():
            raise ValueError("from the script")
        fail()
        """,
    )
    out = launch(str(path))
    assert out.returncode == 1
    assert out.stderr.startswith("Traceback (most recent call last):")
    assert out.stderr.rstrip().endswith("ValueError: from the script")
    assert "tf1compat_init" not in out.stderr and "runpy" not in out.stderr
    assert f'File "{path}", line 4, in <module>' in out.stderr


@pytest.mark.pure
@pytest.mark.parametrize("module", [False, True])
def test_dash_m_runs_a_module_as_main(tmp_path, module):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "job.py").write_text("import sys\nprint(__name__, sys.argv[1:])\n")
    out = launch("-m", "mypkg.job", "--a", "1", cwd=tmp_path, module=module)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "__main__ ['--a', '1']"


@pytest.mark.tf221
def test_a_tf_estimator_script_runs_unchanged_on_tf221(tmp_path):
    path = script(
        tmp_path,
        """
        import sys
        import tensorflow as tf
        from tensorflow_estimator.python.estimator.canned import head  # private path too

        columns = [tf.feature_column.numeric_column("x", shape=[2])]
        est = tf.estimator.DNNClassifier([4], columns, model_dir=sys.argv[1])

        def input_fn():
            return tf.data.Dataset.from_tensors(({"x": [[1.0, 2.0]]}, [[1]])).repeat()

        est.train(input_fn, steps=3)
        print(type(est).__module__, int(est.evaluate(input_fn, steps=1)["global_step"]))
        print(tf.compat.v1.estimator.tpu.TPUEstimator.__module__, head._Head.__name__)
        """,
    )
    out = launch(str(path), str(tmp_path / "model"))
    assert out.returncode == 0, out.stderr[-4000:]
    lines = out.stdout.split()
    assert lines[0].startswith("tf1compat_init.estimator.") and lines[1] == "3"
    assert lines[2].startswith("tf1compat_init.estimator.v1.tpu") and lines[3] == "_Head"
    # Without the launcher the same script fails on TF 2.21, as users report.
    env = dict(os.environ, PYTHONPATH=SRC, TF_CPP_MIN_LOG_LEVEL="3")
    plain = subprocess.run(
        [sys.executable, str(path), str(tmp_path / "m2")], capture_output=True, text=True, env=env
    )
    assert plain.returncode == 1 and "estimator" in plain.stderr.splitlines()[-1]
