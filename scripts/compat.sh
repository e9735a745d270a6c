#!/usr/bin/env bash
# Runs the TF 2.21 leg's test selection and every example under another TensorFlow release.
# Not part of CI: each version takes several minutes to install and many more to test.
#
#   bash scripts/compat.sh 2.20               # builds .venvs/compat-2.20 on first use
#   COMPAT_VENVS=/tmp/venvs bash scripts/compat.sh 2.18 -k estimator
#   COMPAT_BUILD_ONLY=1 bash scripts/compat.sh 2.19   # only build the environment
#   COMPAT_SKIP_TESTS=1 bash scripts/compat.sh 2.17   # only the examples
#
# The environment is what pip's default resolution gives a user: `tensorflow-cpu==VERSION.*`
# with no pin on protobuf or keras, the matching `tf-keras` (installed without its
# dependencies: it declares the full `tensorflow` wheel), and the TF 2.21 leg's test
# requirements. Extra arguments go to pytest. The last line printed is one Markdown table row:
#   | TF | protobuf | keras | tf_keras | tests | examples | date |
# tests/recipes/test_recipes.py builds its TF1 checkpoints with TF 2.15: it uses .venvs/tf215 (made by
# scripts/setup.sh) or TF1COMPAT_TF215_PYTHON.
# Logs (pytest -v: one line per test, so a run stopped early still shows its counts) and the
# junit file stay in the environment's directory (results/).
set -uo pipefail
cd "$(dirname "$0")/.."

VERSION=${1:?usage: scripts/compat.sh VERSION [pytest args], for example scripts/compat.sh 2.20}
shift
[[ $VERSION =~ ^2\.[0-9]+$ ]] || { echo "compat: VERSION is a minor release such as 2.20, got '$VERSION'" >&2; exit 2; }

PY=${PYTHON:-}
if [ -z "$PY" ]; then
  for cand in python3.11 python3; do
    if command -v "$cand" >/dev/null 2>&1; then PY=$cand; break; fi
  done
fi
[ -n "$PY" ] || { echo "compat: no python3.11 or python3 on PATH" >&2; exit 1; }

VENVS=${COMPAT_VENVS:-.venvs}
ENV=$VENVS/compat-$VERSION
RESULTS=$ENV/results
PIP=(-m pip install -q --disable-pip-version-check)

build() {
  local want
  want=$( (echo "$VERSION"; grep -v -e '^tensorflow-cpu' -e '^ruff' requirements/tf221.txt) | sha256sum | cut -c1-16)
  if [ -f "$ENV/.stamp" ] && [ "$(cat "$ENV/.stamp")" = "$want" ]; then
    echo "compat: $ENV is up to date"
    return 0
  fi
  echo "compat: building $ENV (several minutes)"
  rm -rf "$ENV"
  mkdir -p "$VENVS"
  "$PY" -m venv "$ENV" || return 1
  "$ENV/bin/python" "${PIP[@]}" --upgrade pip || return 1
  "$ENV/bin/python" "${PIP[@]}" "tensorflow-cpu==$VERSION.*" || return 1
  # The TF 2.21 leg's test requirements, without its TensorFlow pin and without the linter,
  # resolved together with TensorFlow so that they respect its pins (pandas 3 would otherwise
  # lift numpy to 2.x under TF 2.16/2.17, which require numpy<2).
  "$ENV/bin/python" "${PIP[@]}" "tensorflow-cpu==$VERSION.*" \
    -r <(grep -v -e '^tensorflow-cpu' -e '^ruff' requirements/tf221.txt) || return 1
  "$ENV/bin/python" "${PIP[@]}" --no-deps "tf-keras==$VERSION.*" "keras-hub==0.32.0" || return 1
  "$ENV/bin/python" "${PIP[@]}" --no-deps -e . || return 1
  echo "$want" > "$ENV/.stamp"
}

build || { echo "compat: could not build $ENV" >&2; exit 1; }
[ "${COMPAT_BUILD_ONLY:-0}" = 1 ] && exit 0

export TF_CPP_MIN_LOG_LEVEL=2 PYTHONUNBUFFERED=1
mkdir -p "$RESULTS"
rm -f "$RESULTS/pytest.xml"
pytest_rc=0
if [ "${COMPAT_SKIP_TESTS:-0}" = 1 ]; then
  echo "compat: COMPAT_SKIP_TESTS=1, examples only"
else
  echo "compat: pytest (the TF 2.21 leg's selection) under $ENV, log in $RESULTS/pytest.log"
  "$ENV/bin/python" -m pytest -m "not slow and not gpu and not tf215" -v \
    --junitxml="$RESULTS/pytest.xml" -o junit_family=legacy -p no:cacheprovider "$@" \
    >"$RESULTS/pytest.log" 2>&1
  pytest_rc=$?
  tail -n 5 "$RESULTS/pytest.log"
fi

examples_ok=0 examples_all=0 failed_examples=""
for ex in examples/*.py; do
  examples_all=$((examples_all + 1))
  log=$RESULTS/$(basename "$ex" .py).log
  if PYTHONPATH="$PWD/src" TF_CPP_MIN_LOG_LEVEL=3 "$ENV/bin/python" "$ex" >"$log" 2>&1; then
    examples_ok=$((examples_ok + 1))
  else
    failed_examples="$failed_examples $(basename "$ex")"
    echo "compat: $ex failed, see $log"
  fi
done

"$ENV/bin/python" - "$RESULTS/pytest.xml" "$examples_ok" "$examples_all" "$failed_examples" <<'PY'
import datetime
import sys
import xml.etree.ElementTree as ET
from importlib import metadata


def version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "-"


path, ok, total, failed_examples = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
try:
    suites = list(ET.parse(path).getroot().iter("testsuite"))
except (OSError, ET.ParseError):
    suites = []
if suites:
    t, f, e, s = (sum(int(x.get(k, 0)) for x in suites) for k in ("tests", "failures", "errors", "skipped"))
    xfailed = sum(1 for x in suites for el in x.iter("skipped") if el.get("type") == "pytest.xfail")
    parts = [f"{t - f - e - s:,} passed"]
    if f:
        parts.append(f"{f} failed")
    if e:
        parts.append(f"{e} errors")
    if s - xfailed:
        parts.append(f"{s - xfailed} skipped")
    if xfailed:
        parts.append(f"{xfailed} xfailed")
    tests = ", ".join(parts)
else:
    tests = "not run"
examples = f"{ok}/{total}" + (f" (failed:{failed_examples})" if failed_examples.strip() else "")
row = [
    version("tensorflow-cpu"),
    version("protobuf"),
    version("keras"),
    version("tf-keras"),
    tests,
    examples,
    datetime.date.today().isoformat(),
]
print("| " + " | ".join(row) + " |")
PY
[ $pytest_rc -eq 0 ] && [ "$examples_ok" -eq "$examples_all" ]
