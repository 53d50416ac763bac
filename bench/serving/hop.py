#!/usr/bin/env python3
"""The gateway→worker hop, measured request by request.

`orchid serve` and `orchid gateway` + `orchid worker` run side by side on the same model; one
client sends the same 16-token request (pre-tokenized ids, batch 1, keep-alive HTTP) to each in
strict alternation, so machine drift on a shared box hits both alike; the hop is the median of the
paired differences (gateway − serve) and the difference of the two medians. Rounds of alternation
are whole requests, not whole suites: on a noisy 2-core machine suites run seconds apart differ by
more than the hop itself. And the processes are started afresh --rounds times: on a 2-core VM one
process instance alone can run ~300 µs faster or slower than another of the same binary (where
its threads land), which one set of processes would read as hop. A second `serve`, timed in the
same rotation against the first (the A/A control), shows how large that is in each round.

  python3 bench/serving/hop.py [--requests 3000] [--rounds 5] [--length 16] [--no-control]

Writes bench/results/hop-YYYYMMDD-HHMMSS.{json,md,png}. Target (issue 4): hop ≤ +200 µs at p50.
With build/orchid_rtt_bench built, it also records the floor: a bare HTTP /health and gRPC Health
round trip on the same machine, no engine behind them.
"""
import argparse
import datetime
import http.client
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import MODEL, ORCHID, REPO, free_port, start, stop  # noqa: E402
from plots import plot_after_run  # noqa: E402  (bench/, on the path from run)


def one_round(args, body, n, rtt, seed):
    """Fresh processes: serve (and a second serve for the A/A control), a worker and a gateway,
    started in a shuffled order; n requests to each in rotation. One process instance alone can
    shift its latency by ~300 µs on a 2-core VM (where its threads land), so every round starts
    new ones and the hop is reported over rounds."""
    port, port2, wport, mport, gport = (free_port() for _ in range(5))
    specs = {
        "serve": ([str(ORCHID), "serve", "--model", str(MODEL), "--port", str(port), "--threads",
                   str(args.threads)], f"http://127.0.0.1:{port}/health"),
        "worker": ([str(ORCHID), "worker", "--model", str(MODEL), "--listen", f"127.0.0.1:{wport}",
                    "--metrics-listen", f"127.0.0.1:{mport}", "--threads", str(args.threads)],
                   f"http://127.0.0.1:{mport}/health"),
        "gateway": ([str(ORCHID), "gateway", "--listen", f"127.0.0.1:{gport}", "--model", str(MODEL),
                     "--backend", f"127.0.0.1:{wport}"], f"http://127.0.0.1:{gport}/health"),
    }
    if args.control:
        specs["serve2"] = ([str(ORCHID), "serve", "--model", str(MODEL), "--port", str(port2),
                            "--threads", str(args.threads)], f"http://127.0.0.1:{port2}/health")
    order = [k for k in specs if k != "gateway"]
    random.Random(seed).shuffle(order)
    order.append("gateway")  # needs its worker
    procs = []
    try:
        for name in order:
            procs.append(start(specs[name][0], specs[name][1], f"hop-{name}"))
        targets = [("serve", port), ("gateway", gport)] + ([("serve2", port2)] if args.control else [])
        conns = {name: http.client.HTTPConnection("127.0.0.1", p) for name, p in targets}
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

        names = [name for name, _ in targets]
        for i in range(args.warmup):
            for name in names:
                call(name)
        # Both deployments must give the same numbers before their times mean anything.
        diff = max(abs(a - b) for a, b in zip(first["serve"], first["gateway"]))
        if diff > 1e-6:
            sys.exit(f"serve and gateway disagree: max |diff| {diff}")
        t = {name: [] for name in names}
        for i in range(n):
            # Rotate which goes first, so that none always follows another.
            for name in names[i % len(names):] + names[:i % len(names)]:
                t[name].append(call(name))
        # The floor: what one bare round trip costs here with no engine behind it, HTTP (serve's
        # /health) and gRPC (the worker's Health), from C++ clients. The hop adds one gRPC leg.
        # In the same rotation, the same request to serve, to the worker's Embed over gRPC, and
        # to the gateway: the hop split into the gRPC leg and the gateway's own part.
        rtt_bin = ORCHID.parent / "orchid_rtt_bench"
        floor = None
        if rtt and rtt_bin.exists():
            floor = json.loads(subprocess.run(
                [str(rtt_bin), "--http", f"127.0.0.1:{port}", "--grpc", f"127.0.0.1:{wport}",
                 "--gateway", f"127.0.0.1:{gport}", "--length", str(args.length),
                 "--requests", str(min(args.requests, 2000))],
                check=True, capture_output=True, text=True).stdout)
    finally:
        for p in reversed(procs):
            stop(p)
    return t["serve"], t["gateway"], t.get("serve2", []), floor


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--requests", type=int, default=3000, help="requests to each side")
    ap.add_argument("--length", type=int, default=16, help="tokens per request")
    ap.add_argument("--warmup", type=int, default=200, help="warm-up requests per round")
    ap.add_argument("--rounds", type=int, default=5,
                    help="fresh processes this many times; --requests are spread over them")
    ap.add_argument("--no-control", dest="control", action="store_false",
                    help="skip the A/A control (a second serve timed against the first)")
    ap.add_argument("--threads", type=int, default=0, help="engine threads of serve and worker (0: all cores)")
    ap.add_argument("--out", default=str(REPO / "bench" / "results"))
    args = ap.parse_args()

    # [CLS] + ids + [SEP], as the tokenizer would give: ordinary word-piece ids.
    ids = [101] + [2000 + 37 * i for i in range(args.length - 2)] + [102]
    body = json.dumps({"input": [ids]})
    per_round = max(10, args.requests // args.rounds)
    serve_us, gw_us, control_us, rounds, floor = [], [], [], [], None
    for rnd in range(args.rounds):
        s, g, c, f = one_round(args, body, per_round, rtt=rnd == args.rounds - 1, seed=rnd)
        serve_us += s
        gw_us += g
        control_us += c
        floor = f or floor
        rounds.append({"hop_us": statistics.median([b - a for a, b in zip(s, g)]),
                       "control_us": statistics.median([b - a for a, b in zip(s, c)]) if c else None})
        print(f"round {rnd + 1}/{args.rounds}: hop {rounds[-1]['hop_us']:+.0f} µs"
              + (f", serve A/A control {rounds[-1]['control_us']:+.0f} µs" if c else ""),
              file=sys.stderr)

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
        "rounds": rounds,
        "hop_us_median_of_rounds": statistics.median(r["hop_us"] for r in rounds),
        "hop_us_difference_of_medians": q(gw_us, 0.5) - q(serve_us, 0.5),
    }
    if floor is not None:
        res["floor_us"] = floor
    if control_us:
        res["control_us_median_of_rounds"] = statistics.median(r["control_us"] for r in rounds)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    base = Path(args.out) / f"hop-{stamp}"
    base.with_suffix(".json").write_text(json.dumps(res, indent=1) + "\n")
    hop_rounds = ", ".join(f"{r['hop_us']:+.0f}" for r in rounds)
    control_rounds = ", ".join(f"{r['control_us']:+.0f}" for r in rounds if r["control_us"] is not None)
    md = [f"# Gateway→worker hop, {res['date']}", "",
          f"- machine: {res['machine']} (shared, noisy)",
          f"- commit: {res['commit']}{' (with uncommitted changes)' if res['dirty'] else ''}",
          f"- model: all-MiniLM-L6-v2, fp32, engine threads {args.threads or os.cpu_count()}; "
          f"{args.length} token ids, batch 1, keep-alive HTTP, "
          f"{args.rounds} rounds of fresh processes (started in a shuffled order), each "
          f"{per_round} requests to each target in rotation after {args.warmup} warm-up rounds "
          f"(outputs checked equal)",
          "- made by `python3 bench/serving/hop.py`", "",
          "| target | p50 µs | p90 µs | p99 µs |", "|---|---|---|---|",
          *(f"| {n} | {res[k]['p50']:.0f} | {res[k]['p90']:.0f} | {res[k]['p99']:.0f} |"
            for n, k in (("serve", "serve_us"), ("gateway + worker", "gateway_us"))), "",
          f"- hop, median over rounds of each round's median paired difference: "
          f"**{res['hop_us_median_of_rounds']:+.0f} µs** (rounds: "
          f"{hop_rounds})",
          f"- hop, median of all paired differences: {res['hop_us_median_of_paired_differences']:+.0f} µs; "
          f"difference of medians: {res['hop_us_difference_of_medians']:+.0f} µs",
          *([f"- A/A control, a second `serve` against the first, same rotation: median over rounds "
             f"{res['control_us_median_of_rounds']:+.0f} µs (rounds: "
             f"{control_rounds}): differences of "
             "this size between two identical processes are placement, not the hop"]
            if control_us else []),
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
    plot_after_run(base.with_suffix(".json"))


if __name__ == "__main__":
    main()
