#!/usr/bin/env python3
"""orchid's linear layer (Linear(): the packed GEMM every fp32 model runs on) against PyTorch's
torch.nn.functional.linear (MKL / oneDNN), at the linear-layer shapes of issue 6's models, on
the same machine in the same run, 1 and 2 threads.

Why: the model benchmarks (families_vs_torch.py) spend ~90% of orchid's time in these products,
so a model's orchid/PyTorch ratio cannot exceed this one by much. The two sides alternate round
by round (orchid's binary runs every shape, then PyTorch does), so a noisy neighbour hits both.

Shapes, 8 x 512 tokens (m = 4096), weights [n, k] as nn.Linear stores them:
  xlmr-base   qkv 768->2304 (orchid fuses q, k, v; PyTorch runs the same fused shape here),
              out 768->768, up 768->3072, down 3072->768
  qwen3-0.6b  qkv 1024->4096, out 2048->1024, gate_up 1024->6144, down 3072->1024

  cmake --build build --target orchid_linear_bench
  .venv-bench/bin/python bench/cpu/linear_vs_torch.py [--rounds 5] [--threads 1,2]
Writes Markdown + JSON + a PNG chart to bench/results/linear-vs-torch-<date>.{md,json,png}.
"""
import argparse
import datetime
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "cpu"))
from engine_vs_torch import commit, machine  # noqa: E402
from plots import plot_after_run  # noqa: E402  (bench/, on the path from engine_vs_torch)

SHAPES = [
    ("xlmr.qkv", 768, 2304), ("xlmr.out", 768, 768), ("xlmr.up", 768, 3072), ("xlmr.down", 3072, 768),
    ("qwen3.qkv", 1024, 4096), ("qwen3.out", 2048, 1024), ("qwen3.gate_up", 1024, 6144),
    ("qwen3.down", 3072, 1024),
]


def torch_times(torch, shapes, m, threads, reps):
    torch.set_num_threads(threads)
    out = {}
    g = torch.Generator().manual_seed(0)
    for name, k, n in shapes:
        x = torch.rand(m, k, generator=g) * 2 - 1
        w = (torch.rand(n, k, generator=g) * 2 - 1) * 0.05
        b = (torch.rand(n, generator=g) * 2 - 1) * 0.1
        with torch.inference_mode():
            torch.nn.functional.linear(x, w, b)  # warm-up
            ms = []
            for _ in range(reps):
                t0 = time.perf_counter()
                torch.nn.functional.linear(x, w, b)
                ms.append((time.perf_counter() - t0) * 1e3)
        out[name] = ms
    return out


def orchid_times(binary, shapes, m, threads, reps):
    spec = ",".join(f"{name}:{k}:{n}" for name, k, n in shapes)
    text = subprocess.check_output([binary, "--shapes", spec, "--rows", str(m), "--threads", str(threads),
                                    "--warmup", "1", "--reps", str(reps)], text=True)
    return {row["name"]: row["ms"] for row in map(json.loads, text.splitlines())}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench-bin", default=str(REPO / "build" / "orchid_linear_bench"))
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3, help="timed runs per shape per round, each side")
    ap.add_argument("--out", default=str(REPO / "bench" / "results"))
    args = ap.parse_args()
    import torch

    peak = json.loads(subprocess.check_output([args.bench_bin, "--peak"], text=True))["peak_gflops"]
    results = []
    for threads in [int(t) for t in args.threads.split(",")]:
        samples = {(side, name): [] for side in ("orchid", "torch") for name, _, _ in SHAPES}
        for r in range(args.rounds):
            for side, fn in (("orchid", lambda: orchid_times(args.bench_bin, SHAPES, args.rows, threads, args.reps)),
                             ("torch", lambda: torch_times(torch, SHAPES, args.rows, threads, args.reps))):
                for name, ms in fn().items():
                    samples[(side, name)].extend(ms)
            print(f"threads {threads}: round {r + 1}/{args.rounds}", file=sys.stderr)
        for name, k, n in SHAPES:
            flop = 2.0 * args.rows * k * n
            o = statistics.median(samples[("orchid", name)])
            t = statistics.median(samples[("torch", name)])
            results.append(dict(shape=name, k=k, n=n, m=args.rows, threads=threads, orchid_ms=o, torch_ms=t,
                                orchid_gflops=flop / o / 1e6, torch_gflops=flop / t / 1e6, speedup=t / o,
                                orchid_samples=samples[("orchid", name)], torch_samples=samples[("torch", name)]))

    now = datetime.datetime.now()
    stem = Path(args.out) / f"linear-vs-torch-{now:%Y%m%d-%H%M%S}"
    lines = [
        "# Linear layers: orchid Linear() vs torch.nn.functional.linear (fp32)",
        "",
        f"- machine: {machine()}",
        f"- commit: {commit()}",
        f"- date: {now:%Y-%m-%d %H:%M}",
        f"- torch {torch.__version__}; m = {args.rows} rows; {args.rounds} alternating rounds x {args.reps} runs "
        "per side per shape; medians",
        f"- made by `.venv-bench/bin/python bench/cpu/linear_vs_torch.py --rounds {args.rounds} --threads {args.threads}`",
        f"- one core's fp32 FMA peak, measured (`orchid_linear_bench --peak`: 12 register-only AVX2 FMA chains): "
        f"**{peak:.1f} GFLOP/s**; '% peak' is against threads x that",
        "",
        "| shape | k -> n | threads | orchid ms | PyTorch ms | orchid GFLOP/s | PyTorch GFLOP/s | orchid % peak | PyTorch % peak | orchid / PyTorch speed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ceiling = peak * r["threads"] / 100 if peak else float("nan")
        lines.append(f"| {r['shape']} | {r['k']} -> {r['n']} | {r['threads']} | {r['orchid_ms']:.1f} | {r['torch_ms']:.1f} | "
                     f"{r['orchid_gflops']:.1f} | {r['torch_gflops']:.1f} | {r['orchid_gflops'] / ceiling:.0f}% | "
                     f"{r['torch_gflops'] / ceiling:.0f}% | {r['speedup']:.2f}x |")
    for threads in sorted({r["threads"] for r in results}):
        rows = [r for r in results if r["threads"] == threads]
        total_o = sum(r["orchid_ms"] for r in rows)
        total_t = sum(r["torch_ms"] for r in rows)
        lines.append(f"\nAll eight shapes, {threads} thread(s): orchid {total_o:.0f} ms, PyTorch {total_t:.0f} ms: "
                     f"**{total_t / total_o:.2f}x**.")
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    stem.with_suffix(".json").write_text(json.dumps(dict(machine=machine(), commit=commit(), date=now.isoformat(),
                                                         rows=args.rows, peak_gflops_per_core=peak, results=results),
                                                    indent=1))
    print("\n".join(lines))
    print(f"wrote {stem}.md", file=sys.stderr)
    plot_after_run(stem.with_suffix(".json"))


if __name__ == "__main__":
    main()
