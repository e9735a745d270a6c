#!/usr/bin/env bash
# Creates (or refreshes) the two test environments:
#   .venvs/tf221  TensorFlow 2.21 + Keras 3 + tf_keras 2.21
#   .venvs/tf215  TensorFlow 2.15.1 + tensorflow-estimator 2.15.0
# Each is rebuilt only when its requirements file changed (a stamp holds its hash).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-}
if [ -z "$PY" ]; then
  for cand in python3.11 python3; do
    if command -v "$cand" >/dev/null 2>&1; then PY=$cand; break; fi
  done
fi
[ -n "$PY" ] || { echo "setup: no python3.11 or python3 on PATH" >&2; exit 1; }

make_env() {
  local name=$1 req=requirements/$1.txt env=.venvs/$1
  local want
  want=$(cat "$req" scripts/setup.sh | sha256sum | cut -c1-16)
  if [ -f "$env/.stamp" ] && [ "$(cat "$env/.stamp")" = "$want" ]; then
    echo "setup: $env is up to date"
    return
  fi
  echo "setup: building $env from $req (first time: several minutes)"
  rm -rf "$env"
  "$PY" -m venv "$env"
  "$env/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
  "$env/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
  if [ "$name" = tf221 ]; then
    # tf_keras declares a dependency on the full `tensorflow` wheel; tensorflow-cpu provides it.
    "$env/bin/python" -m pip install -q --disable-pip-version-check --no-deps "tf-keras==2.21.0"
    # keras-hub declares tensorflow-text, which pulls the full `tensorflow` wheel too.
    "$env/bin/python" -m pip install -q --disable-pip-version-check --no-deps "keras-hub==0.32.0"
  fi
  "$env/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e .
  echo "$want" > "$env/.stamp"
}

mkdir -p .venvs
make_env tf221
make_env tf215
