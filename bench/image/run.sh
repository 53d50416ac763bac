#!/usr/bin/env bash
# Decode + preprocess alone against transformers + Pillow (issue 43); see vs_pillow.py.
#   bench/image/run.sh [--repeat N]     PYTHON= a Python with Pillow 13.0.0 + transformers 4.57.6
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-.venv-peers/bin/python}  # bench/cpu/setup-peers.sh makes it
cmake --build build --target orchid_image_bench >/dev/null
"$PYTHON" bench/image/vs_pillow.py "$@"
