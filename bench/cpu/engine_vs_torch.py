#!/usr/bin/env python3
"""orchid's CPU engine vs sentence-transformers on PyTorch, same machine, same run, same threads.

Both sides get identical pre-tokenized batches (real STS-B text cut to exact lengths), so the
comparison is engine against engine: no HTTP, no tokenizer. Before timing, each case checks that
orchid's first embedding matches PyTorch's (cosine >= 0.99999); a case that fails is reported
and not timed. Writes a Markdown table and the raw JSON to bench/results/.
"""
import argparse
import csv
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(REPO), "shared", "data")


def machine():
    model = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def commit():
    try:
        sha = subprocess.check_output(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], text=True).strip()
        dirty = subprocess.call(["git", "-C", REPO, "diff", "--quiet", "HEAD"]) != 0
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def make_cases(model_dir, lengths, batches):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    sentences = []
    with open(os.path.join(SHARED, "stsb", "stsb-en-train.csv"), newline="", encoding="utf-8") as f:
        for row in csv.reader(f):
            sentences.extend(row[:2])
    stream = []
    for enc in tok.encode_batch(sentences[:20000], add_special_tokens=False):
        stream.extend(enc.ids)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    cases, offset = [], 0
    for length in lengths:
        for batch in batches:
            seqs = []
            for _ in range(batch):
                body = stream[offset : offset + length - 2]
                offset = (offset + length) % (len(stream) - length)
                seqs.append([cls] + body + [sep])
            cases.append({"name": f"b{batch}_l{length}", "batch": batch, "length": length, "seqs": seqs})
    return cases


def percentiles(ms):
    a = np.array(ms)
    return {q: float(np.percentile(a, p)) for q, p in (("p50", 50), ("p90", 90), ("p99", 99))} | {"max": float(a.max())}


# orchid's engine variants: --dtype name -> orchid_engine_bench flags. "blas" is float32 with
# every product on OpenBLAS instead of the packed kernel (--gemm blas).
VARIANTS = {
    "float32": ["--dtype", "float32"],
    "bfloat16": ["--dtype", "bfloat16"],
    "blas": ["--dtype", "float32", "--gemm", "blas"],
}


def run_orchid(bench_bin, model_dir, cases, threads, args, dtype="float32"):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for c in cases:
            f.write(json.dumps({"name": c["name"], "seqs": c["seqs"]}) + "\n")
        path = f.name
    cmd = [bench_bin, "--model", model_dir, "--ids", path, "--threads", str(threads),
           "--warmup", str(args.warmup), "--min-iters", str(args.min_iters), "--min-seconds", str(args.min_seconds),
           *VARIANTS[dtype]]
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    out = subprocess.check_output(cmd, text=True, env=env)
    os.unlink(path)
    return {r["name"]: r for r in map(json.loads, out.splitlines())}


def run_torch(model_dir, cases, threads, args):
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    model = SentenceTransformer(model_dir, device="cpu")
    model.eval()
    results = {}
    for c in cases:
        ids = torch.tensor(c["seqs"], dtype=torch.long)
        feats = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids)}
        with torch.inference_mode():
            for _ in range(args.warmup):
                first = model(dict(feats))["sentence_embedding"][0].numpy().copy()
            ms = []
            start = time.perf_counter()
            while True:
                t0 = time.perf_counter()
                model(dict(feats))["sentence_embedding"]
                t1 = time.perf_counter()
                ms.append((t1 - t0) * 1000)
                if len(ms) >= args.min_iters and t1 - start >= args.min_seconds:
                    break
        results[c["name"]] = {"ms": ms, "first_embedding": first}
    return results, torch.__version__


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bench-bin", default=os.path.join(REPO, "build", "orchid_engine_bench"))
    ap.add_argument("--model", default=os.path.join(REPO, "models", "all-MiniLM-L6-v2"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--lengths", default="16,128,512")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--min-iters", type=int, default=20)
    ap.add_argument("--min-seconds", type=float, default=3.0)
    ap.add_argument("--dtypes", default="float32",
                    help="orchid variants to run (PyTorch stays fp32): float32, bfloat16 and/or blas "
                         "(float32 on OpenBLAS, --gemm blas)")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    args = ap.parse_args()
    dtypes = args.dtypes.split(",")
    if any(dt not in VARIANTS for dt in dtypes):
        ap.error(f"--dtypes takes {', '.join(VARIANTS)}")

    cases = make_cases(args.model, [int(x) for x in args.lengths.split(",")], [int(x) for x in args.batches.split(",")])
    print(f"orchid engine vs sentence-transformers (PyTorch), {args.threads} threads", file=sys.stderr)
    orchid = {dt: run_orchid(args.bench_bin, args.model, cases, args.threads, args, dt) for dt in dtypes}
    torch_res, torch_version = run_torch(args.model, cases, args.threads, args)

    rows, raw = [], []
    for c in cases:
        for dt in dtypes:
            o, t = orchid[dt][c["name"]], torch_res[c["name"]]
            a, b = np.array(o["first_embedding"]), t["first_embedding"]
            cos = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
            tp = percentiles(t["ms"])
            t_eps = c["batch"] * len(t["ms"]) / (sum(t["ms"]) / 1000)
            name = c["name"] if dt == "float32" else f"{c['name']} ({dt})"
            rows.append((name, c["batch"], c["length"], o["p50_ms"], o["p99_ms"], o["emb_per_s"],
                         tp["p50"], tp["p99"], t_eps, tp["p50"] / o["p50_ms"], cos,
                         0.9998 if dt == "bfloat16" else 0.99999))
            raw.append({"case": c["name"], "dtype": dt, "batch": c["batch"], "length": c["length"], "cosine": cos,
                        "orchid": {k: o[k] for k in ("iters", "p50_ms", "p90_ms", "p99_ms", "max_ms", "emb_per_s")},
                        "torch": {"iters": len(t["ms"]), **{k + "_ms": v for k, v in tp.items()}, "emb_per_s": t_eps}})

    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    header = [
        "# CPU engine: orchid vs sentence-transformers (PyTorch fp32)",
        "",
        f"- machine: {machine()}",
        f"- commit: {commit()}",
        f"- date: {date}",
        f"- model: all-MiniLM-L6-v2; orchid {', '.join(dtypes)} (bfloat16: linear layers only; "
        "blas: float32 with the linear layers and attention on OpenBLAS, --gemm blas), "
        f"PyTorch fp32; threads: {args.threads} on both sides, torch {torch_version}",
        "- engine level: identical pre-tokenized batches (STS-B text cut to exact lengths), no HTTP, no tokenizer",
        f"- each case: {args.warmup} warm-up runs, then >= {args.min_iters} runs and >= {args.min_seconds} s; "
        "cosine = orchid vs PyTorch on the first sequence, checked before timing",
        "",
        "| case | batch | len | orchid p50 ms | orchid p99 ms | orchid emb/s | torch p50 ms | torch p99 ms | torch emb/s | speed-up (p50) | cosine |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines = [f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.2f} | {r[4]:.2f} | {r[5]:.1f} | {r[6]:.2f} | {r[7]:.2f} | {r[8]:.1f} | {r[9]:.2f}x | {r[10]:.6f} |" for r in rows]
    text = "\n".join(header + lines) + "\n"
    print(text)
    bad = [r[0] for r in rows if r[10] < r[11]]
    os.makedirs(args.out, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    base = os.path.join(args.out, f"cpu-engine-{stamp}")
    with open(base + ".md", "w") as f:
        f.write(text)
    with open(base + ".json", "w") as f:
        json.dump({"machine": machine(), "commit": commit(), "date": date, "threads": args.threads,
                   "torch": torch_version, "cases": raw}, f, indent=1)
    print(f"wrote {base}.md and .json", file=sys.stderr)
    if bad:
        print(f"FIDELITY FAILED for {bad}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
