#!/usr/bin/env bash
# Fetches cudnn-frontend's C++ headers (header-only; NVIDIA's PyPI package
# nvidia-cudnn-frontend ships them in its wheels' include/) into .cache/cudnn-frontend/VERSION/
# (git-ignored), where CMake looks for them (ORCHID_CUDNN_FRONTEND_INCLUDE). Nothing is
# vendored into the repository. Idempotent: an existing copy is kept.
#
#   fetch-cudnn-frontend.sh            fetch (pip download of the pinned wheel, unzip include/)
#   fetch-cudnn-frontend.sh --print    print the include folder (fetching first if needed)
#   fetch-cudnn-frontend.sh --tar OUT  also pack the include folder into OUT (.tar.gz, ~0.5 MB:
#                                      what bench/gpu/prepare-carry.sh carries to a GPU machine)
#
# Needs python3 with pip and network access to PyPI. Without either it fails, and the build
# goes on without cuDNN attention (CMake says so; the own attention kernel is used).
# VERSION: the CMake default (ORCHID_CUDNN_FRONTEND_VERSION); CUDNN_FRONTEND_VERSION overrides.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${CUDNN_FRONTEND_VERSION:-1.32.0}
DEST=.cache/cudnn-frontend/$VERSION
INC=$DEST/include
PY=${PYTHON:-python3}

fetch() {
  [ -f "$INC/cudnn_frontend.h" ] && return 0
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  # Any platform's wheel carries the same headers; this interpreter's is the one pip finds.
  if ! "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$tmp" \
      "nvidia-cudnn-frontend==$VERSION" >&2; then
    echo "fetch-cudnn-frontend: pip download nvidia-cudnn-frontend==$VERSION failed" >&2
    return 1
  fi
  local whl
  whl=$(ls "$tmp"/nvidia_cudnn_frontend-*.whl | head -1)
  mkdir -p "$tmp/x"
  "$PY" - "$whl" "$tmp/x" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    names = [n for n in z.namelist() if n.startswith("include/") and not n.endswith("/")]
    if not any(n == "include/cudnn_frontend.h" for n in names):
        sys.exit("no include/cudnn_frontend.h in " + sys.argv[1])
    for n in names:
        z.extract(n, sys.argv[2])
EOF
  mkdir -p "$DEST"
  rm -rf "$INC"
  mv "$tmp/x/include" "$INC"
  echo "fetch-cudnn-frontend: cudnn-frontend $VERSION headers in $INC" >&2
}

case "${1:-}" in
  "") fetch ;;
  --print) fetch && echo "$PWD/$INC" ;;
  --tar)
    [ -n "${2:-}" ] || { echo "usage: fetch-cudnn-frontend.sh --tar OUT.tar.gz" >&2; exit 2; }
    fetch
    tar -czf "$2" -C "$DEST" include
    ;;
  *) echo "usage: fetch-cudnn-frontend.sh [--print | --tar OUT.tar.gz]" >&2; exit 2 ;;
esac
