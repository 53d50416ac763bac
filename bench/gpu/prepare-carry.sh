#!/usr/bin/env bash
# bench/gpu/prepare-carry.sh — run HERE (the build machine, with network) before the device
# check: fills build-gpu-carry/ (ignored by git through /build-*/; name it in the device tool's
# `carry`) with
#   debs/                     the Debian packages the engine-only build needs on the GPU
#                             machine (simdjson + runtime, fmt + runtime, GoogleTest), unpacked
#                             there into a private prefix (dpkg -x, or ar + tar without dpkg);
#   all-MiniLM-L6-v2-bf16/    the default model (`make model` first) with bf16 weights (~45 MB)
#                             and its sentence-transformers/tokenizer files;
#   cudnn-frontend.tar.gz     cudnn-frontend's headers (~0.5 MB; scripts/fetch-cudnn-frontend.sh):
#                             the build there compiles cuDNN attention against them and against
#                             the cuDNN headers of PyTorch's nvidia-cudnn wheel.
# The whole stays under the device tool's 64 MiB limit together with the repository.
# PYTHON: an interpreter with numpy (default: .venv-bench/bin/python if present, else python3).
set -euo pipefail
cd "$(dirname "$0")/../.."
C=build-gpu-carry
rm -rf "$C"
mkdir -p "$C/debs"
(cd "$C/debs" && apt-get download libsimdjson-dev libsimdjson14 libfmt-dev libfmt9 libgtest-dev)
PY=${PYTHON:-}
if [ -z "$PY" ]; then
  if [ -x .venv-bench/bin/python ]; then PY=.venv-bench/bin/python; else PY=python3; fi
fi
if [ -f models/all-MiniLM-L6-v2/model.safetensors ]; then
  "$PY" bench/gpu/to_bf16.py models/all-MiniLM-L6-v2 "$C/all-MiniLM-L6-v2-bf16"
else
  echo "models/all-MiniLM-L6-v2 missing (make model): the device check will skip it"
fi
scripts/fetch-cudnn-frontend.sh --tar "$C/cudnn-frontend.tar.gz"
du -sh "$C"
