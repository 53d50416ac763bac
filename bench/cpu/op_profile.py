#!/usr/bin/env python3
"""Where a CPU forward pass spends its time, by op: perf's samples of orchid_engine_bench on one
batch shape, each sample put in one op by its call stack (issue 44's "measure first").

  .venv/bin/python bench/cpu/op_profile.py --model models/all-mpnet-base-v2 --dtype bfloat16 \
      --shape 8x512 [--shape 64x384] [--dtype int8] [--seconds 20] [--out bench/results]

For each dtype x shape: orchid_engine_bench loads the model (int8: its start-up calibration and
check), warms up, then runs the batch for --seconds while `perf record -g` (software clock,
999 Hz: these VMs expose no hardware counters) samples it after a delay that skips the load; the
batch's token ids are random (ids don't change the work). Each sample's stack, innermost frame
first, is matched against the categories below in order; the first match names its op:

  attention: products    packed GEMM tiles under RaggedAttention (Q K^T, P V)
  attention: softmax     Softmax* under RaggedAttention
  attention: pack/convert  Q, K, V and P rounded / packed for the products, copies
  attention: other       the rest under RaggedAttention (bias, masks, the loop)
  linear: oneDNN         oneDNN's JIT kernels (int8 matmuls; bf16 where oneDNN was picked)
  linear: int8 epilogue  FinishRow* (dequantization, bias, GELU, outlier channels, residual add)
  linear: int8 quantize  QuantizeActivationRow (per-token activation quantization)
  linear: packed         orchid's packed GEMM tiles (fp32 / bf16 layers), input rounding
  layernorm / rmsnorm, gelu (a separate pass), embedding
  threads: idle/sync     the pool's spin / wait, the kernel's scheduler
  pooling
  other

Writes bench/results/op-profile-YYYYMMDD-HHMMSS.md (and .json) with each op's share; the
machine line says which host it came from.
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "cpu"))
from engine_vs_torch import commit, machine  # noqa: E402

CATEGORIES = [
    # (name, test on the stack's frames, innermost first)
    ("attention: products", lambda f: _under(f, "RaggedAttention") and _inner(f, r"Tile|PackedGemm")),
    ("attention: softmax", lambda f: _under(f, "RaggedAttention") and _inner(f, r"Softmax")),
    ("attention: pack/convert", lambda f: _under(f, "RaggedAttention")
     and _inner(f, r"Pack(Rows|Columns)|ConvertRows|memmove|memcpy")),
    ("attention: other", lambda f: _under(f, "RaggedAttention")),
    ("linear: oneDNN", lambda f: bool(f) and (f[0] == "[JIT]" or f[0].startswith("libdnnl:"))),
    ("linear: int8 epilogue", lambda f: _inner(f, r"FinishRow")),
    ("linear: int8 quantize", lambda f: _inner(f, r"QuantizeActivation|Range(Avx|Scalar)")),
    ("linear: packed", lambda f: _inner(f, r"Tile|PackedGemm|ConvertRowsBf16|Linear")),
    ("layernorm / rmsnorm", lambda f: _inner(f, r"LayerNorm|RmsNorm")),
    ("gelu (separate pass)", lambda f: _inner(f, r"Gelu")),
    ("embedding", lambda f: _inner(f, r"EmbeddingLookup")),
    ("threads: idle/sync", lambda f: _inner(f, r"WorkerLoop|ParallelFor|sched|futex|yield|do_idle|switch")),
    ("pooling", lambda f: _inner(f, r"^orchid::Pool\(|L2Normalize")),
]


def _under(frames, name):
    return any(name in x for x in frames)


def _inner(frames, pattern):
    return bool(frames) and re.search(pattern, frames[0]) is not None


def classify(frames):
    for name, test in CATEGORIES:
        if test(frames):
            return name
    return "other"


FRAME = re.compile(r"^\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)$")


def parse_perf_script(text):
    """`perf script -F comm,tid,ip,sym,dso` output -> one list of frames per sample, innermost first:
    the symbol's name; "[JIT]" for oneDNN's generated code; "libdnnl:NAME" inside libdnnl."""
    stacks, cur = [], []
    for line in text.splitlines():
        if not line.startswith((" ", "\t")):
            if cur:
                stacks.append(cur)
            cur = []
            continue
        m = FRAME.match(line)
        if not m:
            continue
        sym, dso = m.group(1), m.group(2)
        if "JIT" in dso or "perf-" in dso:
            sym = "[JIT]"
        elif "libdnnl" in dso:
            sym = "libdnnl:" + sym
        cur.append(re.sub(r"\+0x[0-9a-f]+$", "", sym))
    if cur:
        stacks.append(cur)
    return stacks


def profile(args, dtype, shape):
    b, n = (int(v) for v in shape.split("x"))
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="op-profile-") as tmp:
        ids = Path(tmp) / "ids.jsonl"
        ids.write_text(json.dumps({"name": shape, "seqs": rng.integers(1000, 20000, size=(b, n)).tolist()}) + "\n")
        data = Path(tmp) / "perf.data"
        cmd = ["perf", "record", "-q", "-F", "999", "-g", "-D", str(int(args.delay * 1000)), "-o", str(data),
               args.bench_bin, "--model", args.model, "--ids", str(ids), "--threads", str(args.threads),
               "--dtype", dtype, "--warmup", "1", "--min-iters", "1", "--min-seconds",
               str(args.seconds + args.delay)]
        print(f"{dtype} {shape}: {' '.join(cmd)}", file=sys.stderr, flush=True)
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(p.stderr[-800:])
        run = next((json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")), {})
        script = subprocess.run(["perf", "script", "-i", str(data), "-F", "comm,tid,ip,sym,dso"],
                                capture_output=True, text=True).stdout
    stacks = parse_perf_script(script)
    counts = Counter(classify(s) for s in stacks)
    total = sum(counts.values())
    return {"dtype": dtype, "shape": shape, "samples": total, "p50_ms": run.get("p50_ms"),
            "shares": {k: counts[k] / total for k in [c for c, _ in CATEGORIES] + ["other"] if counts[k]}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--dtype", action="append", default=[])
    ap.add_argument("--shape", action="append", default=[])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--delay", type=float, default=0, help="seconds not sampled at the start (default: "
                    "measured: the time the engine takes to load, +2 s)")
    ap.add_argument("--bench-bin", default=str(REPO / "build" / "orchid_engine_bench"))
    ap.add_argument("--out", default=str(REPO / "bench" / "results"))
    ap.add_argument("--note", default="", help="a line for the results file (what this run is)")
    args = ap.parse_args()
    dtypes = args.dtype or ["bfloat16"]
    shapes = args.shape or ["8x512"]
    results = []
    for dt in dtypes:
        if not args.delay:  # how long loading takes (int8: calibration and check)
            t0 = datetime.datetime.now()
            with tempfile.TemporaryDirectory() as tmp:
                ids = Path(tmp) / "ids.jsonl"
                ids.write_text(json.dumps({"name": "t", "seqs": [[1000, 1001]]}) + "\n")
                subprocess.run([args.bench_bin, "--model", args.model, "--ids", str(ids), "--threads",
                                str(args.threads), "--dtype", dt, "--warmup", "0", "--min-iters", "1",
                                "--min-seconds", "0"], capture_output=True)
            delay = (datetime.datetime.now() - t0).total_seconds() + 2
        else:
            delay = args.delay
        for sh in shapes:
            a = argparse.Namespace(**vars(args))
            a.delay = delay
            results.append(profile(a, dt, sh))
    date = datetime.datetime.now(datetime.timezone.utc)
    names = [c for c, _ in CATEGORIES] + ["other"]
    lines = [f"# Where the CPU forward pass spends its time, by op ({Path(args.model).name})", "",
             f"- machine: {machine()}", f"- commit: {commit()}", f"- date: {date.strftime('%Y-%m-%d %H:%M UTC')}",
             f"- method: `perf record -g` (software clock, 999 Hz) of orchid_engine_bench --threads {args.threads} "
             f"repeating one batch for {args.seconds:.0f} s after its load; each sample's op from its call stack "
             "(bench/cpu/op_profile.py's categories); shares of all samples of both threads",
             f"- made by `python bench/cpu/op_profile.py {' '.join(sys.argv[1:])}`"]
    if args.note:
        lines.append(f"- {args.note}")
    lines += ["", "| op | " + " | ".join(f"{r['dtype']} {r['shape']}" for r in results) + " |",
              "|---|" + "---|" * len(results)]
    for nm in names:
        if any(nm in r["shares"] for r in results):
            lines.append(f"| {nm} | " + " | ".join(f"{100 * r['shares'].get(nm, 0):.1f}%" for r in results) + " |")
    lines.append("| (batch p50 ms, samples) | " + " | ".join(
        f"{r['p50_ms'] or 0:.0f} ms, {r['samples']}" for r in results) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    os.makedirs(args.out, exist_ok=True)
    base = Path(args.out) / ("op-profile-" + date.strftime("%Y%m%d-%H%M%S"))
    base.with_suffix(".md").write_text(text)
    base.with_suffix(".json").write_text(json.dumps({"machine": machine(), "commit": commit(),
                                                     "date": date.isoformat(), "results": results}, indent=1))
    print(f"wrote {base}.md", file=sys.stderr)


if __name__ == "__main__":
    main()
