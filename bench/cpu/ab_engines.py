#!/usr/bin/env python3
"""A/B two builds of orchid's CPU engine on the same machine, in one run: the check that a
refactor (issue 21: families on the op contract) leaves the CPU speed where it was.

Both orchid_engine_bench binaries load the same model (the random-weight models of real sizes
that families_vs_torch.py caches in models/bench/, and all-MiniLM-L6-v2) and time the same token
ids; single runs alternate A, B, A, B ... until each side has >= --min-iters runs and
>= --min-seconds, so a noisy neighbour's drift lands on both. Reports each side's median and the
ratio B / A of medians (above 1: B is slower), and checks that both first outputs agree
(cosine). Writes Markdown + JSON + a PNG chart to bench/results/ab-engines-*.

  .venv-bench/bin/python bench/cpu/ab_engines.py --a OLD/orchid_engine_bench \
      --b build/orchid_engine_bench [--models xlmr-base,minilm-reranker] [--dtypes float32,bfloat16]

Two dtypes of one build (issue 31's int8 against bf16):

  .venv-bench/bin/python bench/cpu/ab_engines.py --a build/orchid_engine_bench \
      --b build/orchid_engine_bench --dtypes bfloat16 --b-dtype int8 --gap 0 \
      --models all-MiniLM-L6-v2,all-mpnet-base-v2 --shapes 1x16,1x128,8x128,8x512

--gap (seconds of idle before each run, default 0.1) matters for short cases on the shared
2-core VMs: after 0.1 s idle a ~6 ms run is measured while the core wakes up, which added 2-4
ms to it (2026-12-05, Zen 4: MiniLM int8 1 x 128 took 9.4 ms at --gap 0.1 and 6.2 ms at
--gap 0; bf16 12.5 and 11.0), so a faster side's ratio is compressed. --gap 0 measures a busy
server; the default, an idle one.
"""
import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "cpu"))
from engine_vs_torch import OrchidRunner, commit, machine  # noqa: E402
from families_vs_torch import MODELS, make_model  # noqa: E402
from plots import plot_after_run  # noqa: E402  (bench/, on the path from engine_vs_torch)

MINILM = "all-MiniLM-L6-v2"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--a", required=True, help="orchid_engine_bench, side A (before)")
    ap.add_argument("--b", required=True, help="orchid_engine_bench, side B (after)")
    ap.add_argument("--a-label", default="before")
    ap.add_argument("--b-label", default="after")
    ap.add_argument("--models", default=",".join([MINILM, *MODELS]))
    ap.add_argument("--shapes", default="1x128,8x512", help="BATCHxLENGTH list")
    ap.add_argument("--dtypes", default="float32")
    ap.add_argument("--b-dtype", default="",
                    help="B runs with this dtype instead of each of --dtypes (one binary against "
                         "itself: --a X --b X --dtypes bfloat16 --b-dtype int8)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--min-iters", type=int, default=5)
    ap.add_argument("--min-seconds", type=float, default=2.0)
    ap.add_argument("--gap", type=float, default=0.1)
    ap.add_argument("--block", type=int, default=1,
                    help="runs of one side in a row before the other's (1: strict alternation). "
                         "Alternating single runs, each side finds the cache as the other left "
                         "it: the side with the smaller working set (int8's weights are half "
                         "bf16's) re-reads its weights from DRAM every run, which a server "
                         "running one model does not. With --block N the median is of runs "
                         "after a side's first in its block, cache warm, drift still shared")
    ap.add_argument("--out", default=str(REPO / "bench" / "results"))
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    root = REPO / "models" / "bench"
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    shapes = [tuple(int(v) for v in x.split("x")) for x in args.shapes.split(",")]
    for name in args.models.split(","):
        # A model under models/ by its path (all-MiniLM-L6-v2, all-mpnet-base-v2,
        # bench/qwen3-0.6b-causal-text), else one of families_vs_torch.py's random-weight models.
        d = REPO / "models" / name
        if not (d / "config.json").exists():
            d = make_model(name, root)
        cases = [{"name": f"b{b}_l{n}", "seqs": rng.integers(1000, 30000, size=(b, n)).tolist()}
                 for b, n in shapes]
        ids_path = root / f"{name.replace('/', '-')}.ab.ids.jsonl"
        ids_path.write_text("".join(json.dumps(c) + "\n" for c in cases))
        for dt in args.dtypes.split(","):
            print(f"{name} {dt}: A and B alternating ...", file=sys.stderr, flush=True)
            runners = {}
            for side, binary in (("a", args.a), ("b", args.b)):
                args.bench_bin = binary
                side_dt = args.b_dtype if side == "b" and args.b_dtype else dt
                runners[side] = OrchidRunner(args, d, ids_path, ["--dtype", side_dt])
            for c in cases:
                ms = {"a": [], "b": []}
                while any(len(ms[s]) < args.min_iters or sum(ms[s]) / 1000 < args.min_seconds
                          for s in ms):
                    for s in ("a", "b"):
                        for i in range(args.block):
                            t = runners[s].run(c["name"])
                            if args.block == 1 or i > 0:  # a block's first run: the switch's
                                ms[s].append(t)
                            time.sleep(args.gap)
                fa, fb = runners["a"].first[c["name"]], runners["b"].first[c["name"]]
                cos = float(fa @ fb / (np.linalg.norm(fa) * np.linalg.norm(fb) + 1e-30))
                pa, pb = float(np.median(ms["a"])), float(np.median(ms["b"]))
                label = f"{dt} / {args.b_dtype}" if args.b_dtype else dt
                rows.append({"model": name, "dtype": label, "case": c["name"], "a_p50_ms": pa,
                             "b_p50_ms": pb, "ratio": pb / pa, "runs": len(ms["a"]),
                             "cosine_a_b": cos, "a_ms": ms["a"], "b_ms": ms["b"]})
                print(f"  {c['name']}: A {pa:.1f} ms, B {pb:.1f} ms, B/A {pb / pa:.3f}, "
                      f"cos {cos:.6f}", file=sys.stderr, flush=True)
            for r in runners.values():
                r.close()

    date = datetime.datetime.now(datetime.timezone.utc)
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, "ab-engines-" + date.strftime("%Y%m%d-%H%M%S"))
    ratios = np.array([r["ratio"] for r in rows])
    lines = [
        f"# CPU engine A/B: {args.a_label} (A) vs {args.b_label} (B)",
        "",
        f"- machine: {machine()}",
        f"- commit: {commit()} (B); A: {args.a}",
        f"- date: {date.strftime('%Y-%m-%d %H:%M UTC')}",
        f"- threads: {args.threads}; "
        + ("single runs alternating A, B" if args.block == 1 else
           f"blocks of {args.block} runs alternating A, B (each block's first run not counted)")
        + f" until each has >= {args.min_iters} runs and >= {args.min_seconds} s, "
        f"{args.gap} s apart; p50 = median run; ratio = B p50 / A p50 (> 1: B slower)",
        f"- median ratio over all cases: {float(np.median(ratios)):.3f} "
        f"(range {float(ratios.min()):.3f} to {float(ratios.max()):.3f})",
        "",
        "| model | dtype | case | A p50 ms | B p50 ms | B / A | runs | cosine A vs B (first output) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['model']} | {r['dtype']} | {r['case']} | {r['a_p50_ms']:.1f} | "
                     f"{r['b_p50_ms']:.1f} | {r['ratio']:.3f} | {r['runs']} | {r['cosine_a_b']:.6f} |")
    Path(base + ".md").write_text("\n".join(lines) + "\n")
    Path(base + ".json").write_text(json.dumps({"machine": machine(), "commit": commit(),
                                                "date": date.isoformat(), "a": args.a, "b": args.b,
                                                "a_label": args.a_label, "b_label": args.b_label,
                                                "rows": rows}, indent=1))
    print("\n".join(lines))
    print(f"wrote {base}.md", file=sys.stderr)
    plot_after_run(base + ".json")


if __name__ == "__main__":
    main()
