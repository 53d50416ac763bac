#!/usr/bin/env python3
"""Copies a Hugging Face model directory with its safetensors weights converted to bf16
(round to nearest even), for carrying the real all-MiniLM-L6-v2 to the GPU machine in half
the bytes. Only numpy is needed. F16/F64 tensors are converted too; other dtypes are copied.

  to_bf16.py SRC_DIR DST_DIR
"""
import json
import os
import shutil
import struct
import sys

import numpy as np

KEEP = ["config.json", "modules.json", "sentence_bert_config.json",
        "config_sentence_transformers.json", "tokenizer.json", "tokenizer_config.json",
        "special_tokens_map.json", "vocab.txt", "1_Pooling/config.json", "2_Normalize"]
NP = {"F32": np.float32, "F16": np.float16, "F64": np.float64}


def to_bf16(a):
    u = a.astype(np.float32).view(np.uint32)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def main(src, dst):
    os.makedirs(dst, exist_ok=True)
    for rel in KEEP:
        s = os.path.join(src, rel)
        if os.path.isdir(s):
            shutil.copytree(s, os.path.join(dst, rel), dirs_exist_ok=True)
        elif os.path.exists(s):
            os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
            shutil.copy(s, os.path.join(dst, rel))
    with open(os.path.join(src, "model.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out_header, chunks, off = {}, [], 0
    for name, t in header.items():
        if name == "__metadata__":
            out_header[name] = t
            continue
        b, e = t["data_offsets"]
        raw = data[b:e]
        dtype = t["dtype"]
        if dtype in NP:
            raw = to_bf16(np.frombuffer(raw, dtype=NP[dtype])).tobytes()
            dtype = "BF16"
        out_header[name] = {"dtype": dtype, "shape": t["shape"],
                            "data_offsets": [off, off + len(raw)]}
        chunks.append(raw)
        off += len(raw)
    hb = json.dumps(out_header, separators=(",", ":")).encode()
    hb += b" " * ((8 - len(hb) % 8) % 8)
    with open(os.path.join(dst, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for c in chunks:
            f.write(c)
    print(f"{dst}: {off / 1e6:.1f} MB of bf16 weights")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
