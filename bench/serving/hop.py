#!/usr/bin/env python3
"""The gateway→worker hop, measured request by request.

`orchid serve` and `orchid gateway` + `orchid worker` run side by side on the same model; one
client sends the same 16-token request (pre-tokenized ids, batch 1, keep-alive HTTP) to each in
strict alternation, so machine drift on a shared box hits both alike; the hop is the median of the
paired differences (gateway − serve) and the difference of the two medians. Rounds of alternation
are whole requests, not whole suites: on a noisy 2-core machine suites run seconds apart differ by
more than the hop itself.

  python3 bench/serving/hop.py [--requests 3000] [--length 16]

Writes bench/results/hop-YYYYMMDD-HHMMSS.{json,md}. Target (issue 4): hop ≤ +200 µs at p50.
With build/orchid_rtt_bench built, it also records the floor: a bare HTTP /health and gRPC Health
round trip on the same machine, no engine behind them.
"""
import argparse
import datetime
import http.client
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import MODEL, ORCHID, REPO, free_port, start, stop  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--requests", type=int, default=3000, help="requests to each side")
    ap.add_argument("--length", type=int, default=16, help="tokens per request")
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--threads", type=int, default=0, help="engine threads of serve and worker (0: all cores)")
    ap.add_argument("--out", default=str(REPO / "bench" / "results"))
    args = ap.parse_args()

    port, wport, mport, gport = free_port(), free_port(), free_port(), free_port()
    procs = [start([str(ORCHID), "serve", "--model", str(MODEL), "--port", str(port),
                    "--threads", str(args.threads)],
                   f"http://127.0.0.1:{port}/health", "hop-serve")]
    procs.append(start([str(ORCHID), "worker", "--model", str(MODEL), "--listen", f"127.0.0.1:{wport}",
                        "--metrics-listen", f"127.0.0.1:{mport}", "--threads", str(args.threads)],
                       f"http://127.0.0.1:{mport}/health",
                       "hop-worker"))
    procs.append(start([str(ORCHID), "gateway", "--listen", f"127.0.0.1:{gport}", "--model", str(MODEL),
                        "--backend", f"127.0.0.1:{wport}"], f"http://127.0.0.1:{gport}/health", "hop-gateway"))
    try:
        # [CLS] + ids + [SEP], as the tokenizer would give: ordinary word-piece ids.
        ids = [101] + [2000 + 37 * i for i in range(args.length - 2)] + [102]
        body = json.dumps({"input": [ids]})
        conns = {name: http.client.HTTPConnection("127.0.0.1", p) for name, p in
                 (("serve", port), ("gateway", gport))}
        first = {}

        def call(name):
            c = conns[name]
            t0 = time.perf_counter()
            c.request("POST", "/v1/embeddings", body, {"Content-Type": "application/json"})
            r = c.getresponse()
            data = r.read()
            t1 = time.perf_counter()
            if r.status != 200:
                sys.exit(f"{name}: HTTP {r.status}: {data[:200]!r}")
            if name not in first:
                first[name] = json.loads(data)["data"][0]["embedding"]
            return (t1 - t0) * 1e6

        for i in range(args.warmup):
            call("serve")
            call("gateway")
        # Both deployments must give the same numbers before their times mean anything.
        diff = max(abs(a - b) for a, b in zip(first["serve"], first["gateway"]))
        if diff > 1e-6:
            sys.exit(f"serve and gateway disagree: max |diff| {diff}")
        serve_us, gw_us = [], []
        for i in range(args.requests):
            # Alternate which goes first, so neither always follows the other.
            order = ("serve", "gateway") if i % 2 == 0 else ("gateway", "serve")
            t = {name: call(name) for name in order}
            serve_us.append(t["serve"])
            gw_us.append(t["gateway"])
        # The floor: what one bare round trip costs here with no engine behind it, HTTP (serve's
        # /health) and gRPC (the worker's Health), from C++ clients. The hop adds one gRPC leg.
        # In the same rotation, the same request to serve, to the worker's Embed over gRPC, and
        # to the gateway: the hop split into the gRPC leg and the gateway's own part.
        rtt = ORCHID.parent / "orchid_rtt_bench"
        floor = None
        if rtt.exists():
            floor = json.loads(subprocess.run(
                [str(rtt), "--http", f"127.0.0.1:{port}", "--grpc", f"127.0.0.1:{wport}",
                 "--gateway", f"127.0.0.1:{gport}", "--length", str(args.length),
                 "--requests", str(min(args.requests, 2000))],
                check=True, capture_output=True, text=True).stdout)
    finally:
        for p in reversed(procs):
            stop(p)

    paired = [g - s for s, g in zip(serve_us, gw_us)]
    q = lambda v, f: sorted(v)[min(len(v) - 1, int(f * len(v)))]  # noqa: E731
    res = {
        "machine": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                         if l.startswith("model name")), platform.processor()) + f", {os.cpu_count()} cores",
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                                 text=True).stdout.strip(),
        "dirty": bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                                     capture_output=True, text=True).stdout.strip()),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "requests": args.requests, "length": args.length, "engine_threads": args.threads,
        "serve_us": {"p50": q(serve_us, 0.5), "p90": q(serve_us, 0.9), "p99": q(serve_us, 0.99)},
        "gateway_us": {"p50": q(gw_us, 0.5), "p90": q(gw_us, 0.9), "p99": q(gw_us, 0.99)},
        "hop_us_median_of_paired_differences": statistics.median(paired),
        "hop_us_difference_of_medians": q(gw_us, 0.5) - q(serve_us, 0.5),
    }
    if floor is not None:
        res["floor_us"] = floor
    # The spread of the estimate: medians of the paired differences over ten slices in time.
    k = len(paired) // 10
    res["hop_us_per_tenth"] = [statistics.median(paired[i * k:(i + 1) * k]) for i in range(10)]
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    base = Path(args.out) / f"hop-{stamp}"
    base.with_suffix(".json").write_text(json.dumps(res, indent=1) + "\n")
    md = [f"# Gateway→worker hop, {res['date']}", "",
          f"- machine: {res['machine']} (shared, noisy)",
          f"- commit: {res['commit']}{' (with uncommitted changes)' if res['dirty'] else ''}",
          f"- model: all-MiniLM-L6-v2, fp32, engine threads {args.threads or os.cpu_count()}; "
          f"{args.length} token ids, batch 1, keep-alive HTTP, "
          f"{args.requests} requests to each side in strict alternation after {args.warmup} warm-up pairs "
          f"(outputs checked equal)",
          "- made by `python3 bench/serving/hop.py`", "",
          "| target | p50 µs | p90 µs | p99 µs |", "|---|---|---|---|",
          *(f"| {n} | {res[k]['p50']:.0f} | {res[k]['p90']:.0f} | {res[k]['p99']:.0f} |"
            for n, k in (("serve", "serve_us"), ("gateway + worker", "gateway_us"))), "",
          f"- hop, median of paired differences: **{res['hop_us_median_of_paired_differences']:+.0f} µs** "
          f"(per tenth of the run: {', '.join(f'{v:+.0f}' for v in res['hop_us_per_tenth'])})",
          f"- hop, difference of medians: {res['hop_us_difference_of_medians']:+.0f} µs",
          "- target (issue 4): ≤ +200 µs"]
    if floor is not None:
        md += ["", "Round trips from C++ clients (`orchid_rtt_bench`, one connection each, the five kinds "
               f"in rotation, {floor['requests']} each); the first two have no engine behind them:", "",
               "| round trip | p50 µs | p90 µs | p99 µs |", "|---|---|---|---|",
               *(f"| {n} | {floor[k]['p50']:.0f} | {floor[k]['p90']:.0f} | {floor[k]['p99']:.0f} |"
                 for n, k in (("HTTP GET /health (serve)", "http_health_us"),
                              ("gRPC Health (worker)", "grpc_health_us"),
                              ("POST /v1/embeddings (serve)", "serve_embed_us"),
                              ("gRPC Embed (worker, no gateway)", "worker_embed_grpc_us"),
                              ("POST /v1/embeddings (gateway + worker)", "gateway_embed_us")))]
        md += ["", "Medians of the per-round differences (C++ client): gateway − serve "
               f"{floor['gateway_minus_serve_us']:+.0f} µs; worker gRPC Embed − serve "
               f"{floor['worker_grpc_minus_serve_us']:+.0f} µs; gateway − worker gRPC Embed "
               f"{floor['gateway_minus_worker_grpc_us']:+.0f} µs (what the gateway adds on top of a "
               "direct gRPC call: its HTTP side plus its gRPC client)."]
    base.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
