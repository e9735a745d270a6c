"""The README and docs/ stay true: their code blocks run, their links resolve.

Every fenced block in ``README.md`` and ``docs/*.md`` is either run here or marked
``illustrative`` in its info string (```` ```python illustrative ````). Runnable blocks:

- ``python``: executed in a fresh namespace, in a temporary working directory;
- ``bash``: run by bash (``set -euo pipefail``), ``tf1compat-init`` being this checkout's CLI;
- ``console``: a shell session; each ``$ command`` (``\\`` continues it) runs like ``bash``
  and the lines after it are its output: each must appear, in order, in what the command
  printed (spaces collapsed; ``...`` stands for lines left out). A command whose shown output
  has ``error:`` must fail; ``# exit N`` at the end of an output line gives the exit code;
  otherwise it must succeed;
- ``json``: read as a ``--map-file`` and compiled into an ``AssignmentMap``.

Other words of the info string: ``setup=NAME`` makes what the text takes as given (see
``SETUPS``) in that directory first; ``tf221`` runs the block only on TensorFlow >= 2.16.
Relative links must name an existing file and, with a ``#fragment``, one of its headings
(GitHub's anchors).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUNNABLE = {"python", "bash", "console", "json"}
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    words: frozenset[str]
    code: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def illustrative(self) -> bool:
        return "illustrative" in self.words

    @property
    def setup(self) -> str | None:
        for word in self.words:
            if word.startswith("setup="):
                return word.split("=", 1)[1]
        return None


def _blocks(page: Path) -> list[Block]:
    blocks: list[Block] = []
    opened: tuple[int, str, str, str] | None = None  # line, fence, indent, info
    body: list[str] = []
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        m = _FENCE.match(line)
        if opened is None:
            if m:
                opened, body = (number, m.group(2), m.group(1), m.group(3).strip()), []
            continue
        if m and m.group(2).startswith(opened[1]) and not m.group(3).strip():
            start, _, indent, info = opened
            words = info.split()
            code = "\n".join(b[len(indent) :] if b.startswith(indent) else b for b in body)
            lang = words[0] if words else ""
            blocks.append(Block(page, start, lang, frozenset(words[1:]), code + "\n"))
            opened = None
        else:
            body.append(line)
    assert opened is None, f"{page.relative_to(ROOT)}:{opened[0]}: a code block is never closed"
    return blocks


ALL_BLOCKS = [b for page in PAGES for b in _blocks(page)]
RUN_BLOCKS = [b for b in ALL_BLOCKS if not b.illustrative and b.lang in RUNNABLE]


def test_pages_exist_and_have_blocks() -> None:
    assert (ROOT / "docs" / "index.md").exists()
    assert len(PAGES) > 10
    assert len(RUN_BLOCKS) >= 8, [b.id for b in RUN_BLOCKS]


def test_readme_starts_with_the_two_commands() -> None:
    first = _blocks(ROOT / "README.md")[0]
    commands = [line.split("#")[0].strip() for line in first.code.splitlines()]
    assert commands == ["bash scripts/demo.sh", "bash scripts/test.sh"]
    assert first.line <= 3
    assert (ROOT / "scripts" / "demo.sh").exists() and (ROOT / "scripts" / "test.sh").exists()


def test_readme_stays_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 300, (
        f"README.md has {lines} lines: keep it a tour (at most 300) and move details to the "
        "front end's page in docs/ (docs/index.md says where new material goes)"
    )


def test_every_block_is_run_or_marked_illustrative() -> None:
    unmarked = [
        f"{b.id} (```{b.lang} {' '.join(sorted(b.words))})"
        for b in ALL_BLOCKS
        if not b.illustrative and b.lang not in RUNNABLE
    ]
    assert not unmarked, "mark these blocks `illustrative` or make them runnable: " + ", ".join(
        unmarked
    )
    unknown = [b.id for b in RUN_BLOCKS if b.setup is not None and b.setup not in SETUPS]
    assert not unknown, f"unknown setup= in {unknown}"
    odd = [
        f"{b.id}: {word}"
        for b in ALL_BLOCKS
        for word in b.words
        if word not in ("illustrative", "tf221") and not word.startswith("setup=")
    ]
    assert not odd, f"unknown words in info strings (a typo?): {odd}"


# -- links ------------------------------------------------------------------------------

_LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)\)")


def _prose(page: Path) -> str:
    """The page without its code blocks (links and headings inside them do not count)."""
    out, fence = [], None
    for line in page.read_text(encoding="utf-8").splitlines():
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(2)
        elif fence is not None and m and m.group(2).startswith(fence) and not m.group(3).strip():
            fence = None
        elif fence is None:
            out.append(line)
    return "\n".join(out)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    kept = []
    for ch in text:
        if ch in "-_ " or unicodedata.category(ch)[0] in "LNM":
            kept.append("-" if ch == " " else ch)
    return "".join(kept)


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for line in _prose(page).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = _slug(m.group(1))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def _links() -> list[tuple[Path, str]]:
    pages = PAGES + [ROOT / "benchmarks" / "README.md"]
    return [(p, target) for p in pages for target in _LINK.findall(_prose(p))]


def test_relative_links_resolve() -> None:
    broken = []
    for page, target in _links():
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
            continue
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        where = f"{page.relative_to(ROOT)}: ({target})"
        if not dest.exists():
            broken.append(f"{where}: no such file")
        elif fragment and (dest.suffix != ".md" or fragment not in _anchors(dest)):
            broken.append(f"{where}: no heading #{fragment}")
    assert not broken, "\n".join(broken)


def test_slug_matches_githubs() -> None:
    assert (
        _slug("Tensor transforms and recipes (`tf1compat_init.transforms`)")
        == "tensor-transforms-and-recipes-tf1compat_inittransforms"
    )
    assert _slug("Fine-tuning Google's BERT (`bert-tensorflow`) on TF 2.21") == (
        "fine-tuning-googles-bert-bert-tensorflow-on-tf-221"
    )


# -- setups: what the text takes as given -------------------------------------------------


def _pretrained(directory: Path) -> None:
    """``pretrained/``: a TF1 name-based checkpoint of ``dense/kernel`` [4, 2], ``dense/bias``
    [2] and ``global_step``, as ``tf.compat.v1.train.Saver`` writes it."""
    import numpy as np
    import tensorflow as tf

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        with v1.variable_scope("dense"):
            v1.get_variable("kernel", initializer=np.arange(8, dtype=np.float32).reshape(4, 2))
            v1.get_variable("bias", initializer=np.array([0.5, -0.5], np.float32))
        v1.train.get_or_create_global_step()
        saver = v1.train.Saver()
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            # A relative path, as a user types it: the paths the CLI prints are then relative too.
            assert Path.cwd() == directory
            saver.save(sess, os.path.join("pretrained", "model.ckpt"), global_step=100)


def _models(directory: Path) -> dict:
    """``pretrained/``, a built Keras ``model`` with one ``Dense`` layer named ``dense`` (4 -> 2),
    and a ``module`` whose variables are ``enc/dense/{kernel,bias}``."""
    import keras
    import tensorflow as tf

    _pretrained(directory)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, name="dense")])
    module = tf.Module()
    module.enc = tf.Module()
    module.enc.dense = tf.Module()
    module.enc.dense.kernel = tf.Variable(tf.zeros([4, 2]))
    module.enc.dense.bias = tf.Variable(tf.zeros([2]))
    return {"model": model, "module": module}


def _submodels(directory: Path) -> None:
    """``pretrained/sub_model_{1,2}/``: the v1 examples' two sub-model checkpoints (Adam)."""
    helpers = pytest.importorskip("support.migrate_helpers")
    # A relative path, as a user types it: the paths the CLI prints are then relative too.
    assert Path.cwd() == directory
    helpers.write_sub_models("pretrained")


def _estimator(directory: Path) -> dict:
    """``pretrained/`` and a small classifier's ``model_fn`` over it (``dense/kernel`` [4, 2],
    ``dense/bias``, a ``softmax_tensor``), its input functions and ``feature_spec``."""
    import numpy as np
    import tensorflow as tf

    from tf1compat_init import estimator as est

    _pretrained(directory)
    v1 = tf.compat.v1

    def model_fn(features, labels, mode, params):
        with v1.variable_scope("dense"):
            kernel = v1.get_variable("kernel", [4, 2])
            bias = v1.get_variable("bias", [2], initializer=v1.zeros_initializer())
        logits = tf.matmul(features["x"], kernel) + bias
        probabilities = tf.nn.softmax(logits, name="softmax_tensor")
        predictions = {"classes": tf.argmax(logits, 1), "probabilities": probabilities}
        if mode == est.ModeKeys.PREDICT:
            return est.EstimatorSpec(mode, predictions=predictions)
        loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
        step = v1.train.get_or_create_global_step()
        train_op = v1.train.GradientDescentOptimizer(params.get("lr", 0.1)).minimize(loss, step)
        metrics = {"accuracy": v1.metrics.accuracy(labels, predictions["classes"])}
        return est.EstimatorSpec(mode, loss=loss, train_op=train_op, eval_metric_ops=metrics)

    x = np.random.default_rng(0).normal(size=(32, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32)

    def train_input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(8)

    def eval_input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(8)

    def predict_input_fn():
        return tf.data.Dataset.from_tensor_slices({"x": x}).batch(8)

    return {
        "model_fn": model_fn,
        "train_input_fn": train_input_fn,
        "eval_input_fn": eval_input_fn,
        "predict_input_fn": predict_input_fn,
        "feature_spec": {"x": tf.io.FixedLenFeature([4], tf.float32)},
    }


#: Setups by name: each makes files in the block's working directory and may return names
#: that the block's text takes as given.
SETUPS = {
    "pretrained": _pretrained,
    "models": _models,
    "submodels": _submodels,
    "estimator": _estimator,
}


def _tf_at_least_216() -> bool:
    import tensorflow as tf

    major, minor = (int(x) for x in tf.__version__.split(".")[:2])
    return (major, minor) >= (2, 16)


@pytest.mark.parametrize("block", RUN_BLOCKS, ids=lambda b: b.id)
def test_block_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if "tf221" in block.words and not _tf_at_least_216():
        pytest.skip("the block needs TensorFlow >= 2.16")
    monkeypatch.chdir(tmp_path)
    given = (SETUPS[block.setup](tmp_path) if block.setup else None) or {}
    if block.lang == "python":
        _run_python(block, given)
    elif block.lang == "bash":
        _run_bash(block, tmp_path)
    elif block.lang == "console":
        _run_console(block, tmp_path)
    else:
        _run_json(block, tmp_path)


def _run_python(block: Block, given: dict) -> None:
    code = compile(block.code, block.id, "exec")
    namespace: dict = {"__name__": "__docs__", **given}
    _forget_summary_writers()
    with contextlib.redirect_stdout(io.StringIO()):
        exec(code, namespace)  # noqa: S102 - the docs' own examples


def _forget_summary_writers() -> None:
    """Each block is a fresh program: TensorFlow's process-wide FileWriterCache is keyed by
    the directory as written ("run/"), so a writer cached by an earlier block (in another
    working directory) would be handed to this one, and its directory never made here."""
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        tf.compat.v1.summary.FileWriterCache.clear()


def _shell(script: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), TF_CPP_MIN_LOG_LEVEL="3")
    shim = f'tf1compat-init() {{ "{sys.executable}" -m tf1compat_init "$@"; }}\n'
    return subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + shim + script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _run_bash(block: Block, tmp_path: Path) -> None:
    result = _shell(block.code, tmp_path)
    assert result.returncode == 0, f"{block.id}\n{result.stdout}\n{result.stderr}"


def _session(code: str) -> list[tuple[str, list[str]]]:
    """``[(command, shown output lines)]`` of a console block."""
    steps: list[tuple[str, list[str]]] = []
    lines = code.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.startswith("$ "):
            assert steps, f"output before the first command: {line!r}"
            steps[-1][1].append(line)
            continue
        command = line[2:]
        while command.endswith("\\") and i < len(lines):
            command = command[:-1] + " " + lines[i].strip()
            i += 1
        steps.append((command, []))
    return steps


def _squash(line: str) -> str:
    return " ".join(line.split())


def _run_console(block: Block, tmp_path: Path) -> None:
    for command, shown in _session(block.code):
        expect_rc = 0
        wanted = []
        for line in shown:
            m = re.search(r"\s+# exit (\d+)$", line)
            if m:
                expect_rc, line = int(m.group(1)), line[: m.start()]
            if "error:" in line:
                expect_rc = None  # any failure
            if line.strip() and line.strip() != "...":
                wanted.append(_squash(line))
        result = _shell(command, tmp_path)
        where = f"{block.id}: $ {command}\n{result.stdout}{result.stderr}"
        if expect_rc is None:
            assert result.returncode != 0, where
        else:
            assert result.returncode == expect_rc, where
        printed = [_squash(x) for x in (result.stdout + result.stderr).splitlines()]
        at = 0
        for line in wanted:
            try:
                at = printed.index(line, at) + 1
            except ValueError:
                raise AssertionError(f"{where}\nnot printed (in this order): {line!r}") from None


def _run_json(block: Block, tmp_path: Path) -> None:
    import tf1compat_init as tci
    from tf1compat_init.migrate import load_map_file

    path = tmp_path / "map.json"
    path.write_text(block.code, encoding="utf-8")
    rules = load_map_file(path)
    assert rules
    tci.AssignmentMap(rules)


def test_every_page_is_listed() -> None:
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in (ROOT / "docs").glob("*.md"):
        if page.name != "index.md":
            assert f"]({page.name})" in index, f"docs/index.md does not list {page.name}"
        assert f" {page.name}" in nav, f"mkdocs.yml's nav does not list {page.name}"
