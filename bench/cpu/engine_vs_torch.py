#!/usr/bin/env python3
"""orchid's CPU engine vs sentence-transformers on PyTorch, same machine, same run, same threads.

Both sides get identical pre-tokenized batches (real STS-B text cut to exact lengths), so the
comparison is engine against engine: no HTTP, no tokenizer. Single runs of the two sides alternate
(orchid_engine_bench --interactive keeps the model loaded), so the machine's drift lands on both.
orchid's first embedding must match PyTorch's (cosine >= 0.99999; bfloat16 0.9998), or the run
fails. Writes a Markdown table, the raw JSON and a PNG chart (bench/plots.py) to bench/results/.
"""
import argparse
import csv
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(REPO, "tests", "data")  # STS-B and the tokenizers (tests/data/README.md)
sys.path.insert(0, os.path.join(REPO, "bench"))
from plots import plot_after_run  # noqa: E402


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


class OrchidRunner:
    """orchid_engine_bench --interactive: one timed run per call, the model loaded once."""

    def __init__(self, args, model_dir, ids_path, flags, env=None):
        self.proc = subprocess.Popen([args.bench_bin, "--model", str(model_dir), "--ids", str(ids_path),
                                      "--threads", str(args.threads), "--warmup", str(args.warmup),
                                      *flags, "--interactive"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.first = {}

    def run(self, case):
        self.proc.stdin.write(case + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            sys.exit(f"orchid_engine_bench exited (status {self.proc.wait()}) on case {case}")
        r = json.loads(line)
        if "first_embedding" in r:
            self.first[case] = np.array(r["first_embedding"], dtype=np.float64)
        return r["ms"]

    def close(self):
        self.proc.stdin.close()
        if self.proc.wait() != 0:
            sys.exit(f"orchid_engine_bench failed (status {self.proc.returncode})")


def time_both(orchid, run, case, args):
    """Alternating single runs: orchid, then PyTorch, until both have enough. Returns both ms lists and
    PyTorch's first output (after its warm-up)."""
    import torch
    with torch.inference_mode():
        for _ in range(args.warmup):
            first = run(case["seqs"])[0].numpy().copy()
        ms = {"orchid": [], "torch": []}
        spent = {"orchid": 0.0, "torch": 0.0}
        while any(len(ms[w]) < args.min_iters or spent[w] < args.min_seconds for w in ms):
            ms["orchid"].append(orchid.run(case["name"]))
            time.sleep(args.gap)
            t0 = time.perf_counter()
            run(case["seqs"])
            ms["torch"].append((time.perf_counter() - t0) * 1000)
            time.sleep(args.gap)
            for w in ms:
                spent[w] = sum(ms[w]) / 1000
    return ms["orchid"], ms["torch"], np.atleast_1d(first)


def torch_runner(model_dir, threads):
    """sentence-transformers on PyTorch: run(seqs) -> the batch's sentence embeddings."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    model = SentenceTransformer(model_dir, device="cpu")
    model.eval()

    def run(seqs):
        ids = torch.tensor(seqs, dtype=torch.long)
        feats = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids)}
        return model(feats)["sentence_embedding"]

    return run, torch.__version__


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
    ap.add_argument("--gap", type=float, default=0.2,
                    help="seconds idle between runs, so one side's threads are asleep when the other starts")
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
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for c in cases:
            f.write(json.dumps({"name": c["name"], "seqs": c["seqs"]}) + "\n")
        ids_path = f.name
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads))
    run, torch_version = torch_runner(args.model, args.threads)
    # Each variant alternates single runs with PyTorch's (time_both), so the machine's drift
    # over minutes lands on both sides of every ratio.
    timed = {}
    for dt in dtypes:
        orchid = OrchidRunner(args, args.model, ids_path, VARIANTS[dt], env)
        for c in cases:
            print(f"{c['name']} ({dt}): orchid and torch alternating ...", file=sys.stderr, flush=True)
            o_ms, t_ms, t_first = time_both(orchid, run, c, args)
            timed[dt, c["name"]] = o_ms, t_ms, t_first, orchid.first[c["name"]]
        orchid.close()
    os.unlink(ids_path)

    rows, raw = [], []
    for c in cases:
        for dt in dtypes:
            o_ms, t_ms, b, a = timed[dt, c["name"]]
            cos = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
            op, tp = percentiles(o_ms), percentiles(t_ms)
            o_eps = c["batch"] * len(o_ms) / (sum(o_ms) / 1000)
            t_eps = c["batch"] * len(t_ms) / (sum(t_ms) / 1000)
            name = c["name"] if dt == "float32" else f"{c['name']} ({dt})"
            rows.append((name, c["batch"], c["length"], op["p50"], op["p99"], o_eps,
                         tp["p50"], tp["p99"], t_eps, tp["p50"] / op["p50"], cos,
                         0.9998 if dt == "bfloat16" else 0.99999))
            raw.append({"case": c["name"], "dtype": dt, "batch": c["batch"], "length": c["length"], "cosine": cos,
                        "orchid": {"iters": len(o_ms), **{k + "_ms": v for k, v in op.items()},
                                   "emb_per_s": o_eps, "ms": o_ms},
                        "torch": {"iters": len(t_ms), **{k + "_ms": v for k, v in tp.items()},
                                  "emb_per_s": t_eps, "ms": t_ms}})

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
        f"- each case and variant: {args.warmup} warm-up runs per side, then single runs alternating orchid / "
        f"PyTorch until each side has >= {args.min_iters} runs and >= {args.min_seconds} s (PyTorch timed "
        "again for each variant); cosine = orchid vs PyTorch on the first sequence",
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
    plot_after_run(base + ".json")
    if bad:
        print(f"FIDELITY FAILED for {bad}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
