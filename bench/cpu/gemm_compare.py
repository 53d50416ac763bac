#!/usr/bin/env python3
"""Medians and ratios from orchid_gemm_bench's JSON (--benchmark_out, with repetitions).

Prints one markdown row per (shape, M, threads): each back end's median time over the
repetitions (us), its spread (min-max), and its ratio to the in-house packed kernel
(> 1 = slower than packed).
"""
import json
import statistics
import sys
from collections import defaultdict

BACKENDS = ["packed", "openblas", "onednn", "onednn_rt", "linear"]


def main(paths):
    times = defaultdict(list)  # (backend, case) -> [us]
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        for b in data["benchmarks"]:
            if b.get("run_type") != "iteration":
                continue
            name = b["run_name"] if "run_name" in b else b["name"]
            name = name.replace("/real_time", "")
            backend, case = name.split("/", 1)
            scale = {"us": 1.0, "ms": 1e3, "ns": 1e-3, "s": 1e6}[b["time_unit"]]
            times[(backend, case)].append(b["real_time"] * scale)
    cases = []
    for (backend, case) in times:
        if case not in cases:
            cases.append(case)
    print("| shape (K, N) | M | threads | " +
          " | ".join(f"{b} us" for b in BACKENDS) + " | " +
          " | ".join(f"{b}/packed" for b in BACKENDS[1:]) + " |")
    print("|---|---|---|" + "---|" * (2 * len(BACKENDS) - 1))
    order = {"qkv": 0, "attn_out": 1, "inter": 2, "out": 3}
    cases.sort(key=lambda c: (order.get(c.split("/")[0], 9), int(c.split("/")[2][1:]),
                              int(c.split("/")[3][1:])))
    for case in cases:
        shape, kn, m, t = case.split("/")
        med = {}
        cells = []
        for b in BACKENDS:
            v = times.get((b, case))
            if not v:
                cells.append("-")
                continue
            med[b] = statistics.median(v)
            cells.append(f"{med[b]:.1f} ({min(v):.0f}-{max(v):.0f}, n={len(v)})")
        ratios = [f"{med[b] / med['packed']:.2f}" if b in med and "packed" in med else "-"
                  for b in BACKENDS[1:]]
        print(f"| {shape} {kn.replace('_', ' ')} | {m[1:]} | {t[1:]} | " + " | ".join(cells) +
              " | " + " | ".join(ratios) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
