#!/usr/bin/env bash
# Sets up the environments (first run: several minutes), then runs every example end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export TF_CPP_MIN_LOG_LEVEL=3 PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
for ex in examples/*.py; do
  echo
  echo "=================== $ex"
  .venvs/tf221/bin/python "$ex"
done
echo
echo "demo: all examples ran"
