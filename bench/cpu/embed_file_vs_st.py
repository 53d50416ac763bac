#!/usr/bin/env python3
"""Offline bulk embedding, text in and vectors out: `orchid embed` on a JSON Lines file vs
sentence-transformers' `SentenceTransformer.encode` (what a user would run instead), same
machine, same run, same threads, same sentences (STS-B train, English).

orchid's time is the whole process, wall clock: start, model load, reading the file,
tokenizing, the engine, writing the .npy. sentence-transformers' time is `encode()` alone, on a
model loaded beforehand (its load time is reported apart), with its default batch size (32; it
sorts inputs by length itself). Before timing, orchid's embeddings are checked against
sentence-transformers' (cosine >= 0.99999 for every sentence). Medians over --runs.

  .venv-bench/bin/python bench/cpu/embed_file_vs_st.py [--sentences 4000] [--runs 3]

Writes bench/results/embed-file-YYYYMMDD-HHMMSS.{md,json,png}.
"""
import argparse
import csv
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine_vs_torch import SHARED, REPO, commit, machine  # noqa: E402
from plots import plot_after_run  # noqa: E402  (bench/, on the path from engine_vs_torch)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sentences", type=int, default=4000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", default=os.path.join(REPO, "models", "all-MiniLM-L6-v2"))
    ap.add_argument("--orchid", default=os.environ.get("ORCHID_BIN", os.path.join(REPO, "build", "orchid")))
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    args = ap.parse_args()

    sentences = []
    with open(os.path.join(SHARED, "stsb", "stsb-en-train.csv"), newline="", encoding="utf-8") as f:
        for row in csv.reader(f):
            sentences.extend(row[:2])
    sentences = sentences[:args.sentences]

    import torch
    from sentence_transformers import SentenceTransformer
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    st = SentenceTransformer(args.model, device="cpu")
    st_load = time.perf_counter() - t0

    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "in.jsonl")
        with open(src, "w", encoding="utf-8") as f:
            for s in sentences:
                f.write(json.dumps(s) + "\n")
        out = os.path.join(tmp, "out.npy")
        cmd = [args.orchid, "embed", "--model", args.model, "--input", src, "--output", out,
               "--threads", str(args.threads), "--truncate", "--quiet"]

        def run_orchid():
            t = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            return time.perf_counter() - t

        def run_st():
            t = time.perf_counter()
            e = st.encode(sentences, convert_to_numpy=True)
            return time.perf_counter() - t, e

        run_orchid()
        ours = np.load(out)
        _, ref = run_st()
        cos = (ours * ref).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(ref, axis=1)
        worst = float(cos.min())
        if worst < 0.99999:
            sys.exit(f"fidelity check failed: min cosine {worst:.7f} (sentence {int(cos.argmin())})")
        orchid_s, st_s = [], []
        for _ in range(args.runs):  # alternate, so drift on a shared machine hits both
            orchid_s.append(run_orchid())
            st_s.append(run_st()[0])

    n = len(sentences)
    o_med, s_med = statistics.median(orchid_s), statistics.median(st_s)
    stamp = datetime.datetime.now(datetime.timezone.utc)
    result = {
        "machine": machine(), "commit": commit(), "date": stamp.isoformat(timespec="seconds"),
        "threads": args.threads, "sentences": n, "model": os.path.basename(args.model),
        "torch": torch.__version__, "sentence_transformers": __import__("sentence_transformers").__version__,
        "min_cosine": worst, "orchid_seconds": orchid_s, "st_encode_seconds": st_s,
        "st_load_seconds": st_load,
    }
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, "embed-file-" + stamp.strftime("%Y%m%d-%H%M%S"))
    with open(base + ".json", "w") as f:
        json.dump(result, f, indent=1)
    md = [
        "# Offline bulk embedding: `orchid embed` vs sentence-transformers `encode()`", "",
        f"- machine: {result['machine']} (shared: read medians and ratios)",
        f"- commit: {result['commit']}; date: {result['date']}",
        f"- {n} STS-B train sentences (English), {result['model']}, fp32, {args.threads} threads on both sides; "
        f"torch {result['torch']}, sentence-transformers {result['sentence_transformers']}",
        f"- orchid: the whole `orchid embed` process (start, model load, JSONL in, tokenize, engine, .npy out); "
        f"sentence-transformers: `encode()` alone on a loaded model (its load took {st_load:.2f} s)",
        f"- fidelity before timing: min cosine {worst:.7f} over every sentence",
        f"- made by `.venv-bench/bin/python bench/cpu/embed_file_vs_st.py --sentences {n} --runs {args.runs}`", "",
        "| side | runs (s) | median s | sentences/s |", "|---|---|---|---|",
        f"| orchid embed | {', '.join(f'{x:.2f}' for x in orchid_s)} | {o_med:.2f} | {n / o_med:.0f} |",
        f"| sentence-transformers encode | {', '.join(f'{x:.2f}' for x in st_s)} | {s_med:.2f} | {n / s_med:.0f} |",
        "", f"**orchid / sentence-transformers throughput: {s_med / o_med:.2f}x** (medians)", "",
    ]
    with open(base + ".md", "w") as f:
        f.write("\n".join(md))
    print("\n".join(md))
    plot_after_run(base + ".json")


if __name__ == "__main__":
    main()
