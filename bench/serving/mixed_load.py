#!/usr/bin/env python3
"""Mixed-load benchmark (issue 20): do search queries stay fast while bulk indexing runs?

A probe sends one short query every 0.2 s (open loop: a slow answer does not delay the next
query), first alone, then while 1, 2 and 4 bulk clients each send 64-document requests back to
back. Reported per target: the probe's p50 / p99 / max latency and the bulk documents/s, next to
the same bulk clients' documents/s without the probe (bulk alone). Then the abandoned-request
test: a client sends 512 documents of 256 tokens and disconnects after 1 s; a query sent
right after is timed (how long the abandoned work holds the engine).

Targets, one after another in one run on this machine (all-MiniLM-L6-v2, the default model):
  serve     `orchid serve` (priority scheduling, the default)
  gateway   `orchid gateway` in front of two `orchid worker` replicas (one engine thread each)
  fcfs      `orchid serve --scheduling fcfs` (first come, first served: the old behaviour)
  infinity  Infinity (infinity-emb, PyTorch backend), a peer a user would pick instead

Last, `serve` and `serve --scheduling fcfs` run side by side and bulk-alone phases alternate
between them (the cost of priority scheduling to bulk throughput, with the host's drift on both
sides). Writes bench/results/mixed-load-<date>.md, .jsonl, .png and -probe.png (bench/plots.py:
the probe against bulk clients; every probe query over time). Usage, from the repo root
after `make build model`:
    bench/serving/mixed_load.sh                   # installs Infinity + matplotlib into .venv-peer
    bench/serving/mixed_load.sh --targets serve,fcfs --phase-seconds 10
"""
import argparse
import concurrent.futures as cf
import csv
import datetime
import http.client
import json
import os
import platform
import queue
import random
import re
import socket
import subprocess
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import MODEL, ORCHID, REPO, free_port, start, stop  # noqa: E402
from plots import plot_after_run  # noqa: E402  (bench/, on the path from run)

NAME = "all-MiniLM-L6-v2"
STSB = REPO / "tests" / "data" / "stsb" / "stsb-en-train.csv"
INFINITY = REPO / ".venv-peer" / "bin" / "infinity_emb"


def sentences():
    out = []
    with open(STSB, newline="", encoding="utf-8") as f:
        for row in csv.reader(f):
            out.extend(row[:2])
    return [s for s in out if s.strip()]


def documents(sents, chars, count, rng):
    """Documents of about `chars` characters, made of consecutive STS-B sentences."""
    docs = []
    i = rng.randrange(len(sents))
    for _ in range(count):
        parts, n = [], 0
        while n < chars:
            s = sents[i % len(sents)]
            i += 1
            parts.append(s)
            n += len(s) + 1
        docs.append(" ".join(parts))
    return docs


class Client:
    """POSTs embeddings requests over a kept-alive connection (reopened after an error)."""

    def __init__(self, port, path, extra=None):
        self.port, self.path, self.conn = port, path, None
        self.extra = extra or {}

    def embed(self, inputs, timeout=600):
        body = json.dumps({"input": inputs, "model": NAME, **self.extra})
        for attempt in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
                self.conn.request("POST", self.path, body, {"Content-Type": "application/json"})
                r = self.conn.getresponse()
                data = r.read()
                if r.status != 200:
                    raise RuntimeError(f"HTTP {r.status}: {data[:200]!r}")
                reply = json.loads(data)
                if len(reply["data"]) != len(inputs):
                    raise RuntimeError("wrong number of embeddings")
                return reply.get("usage", {}).get("prompt_tokens", 0)
            except (http.client.HTTPException, ConnectionError, OSError):
                self.conn = None
                if attempt == 1:
                    raise


class Probe:
    """One short query every `interval` s, each from the pool so that none waits for another."""

    def __init__(self, port, path, queries, interval=0.2):
        self.port, self.path, self.queries, self.interval = port, path, queries, interval
        self.idle = queue.SimpleQueue()
        self.pool = cf.ThreadPoolExecutor(64)

    def one(self, text):
        try:
            c = self.idle.get_nowait()
        except queue.Empty:
            c = Client(self.port, self.path)
        t = time.perf_counter()
        c.embed([text])
        ms = (time.perf_counter() - t) * 1e3
        self.idle.put(c)
        return ms

    def run(self, seconds, rng):
        futures = []
        t0 = time.perf_counter()
        k = 0
        while True:
            due = t0 + k * self.interval
            if due - t0 >= seconds:
                break
            time.sleep(max(0.0, due - time.perf_counter()))
            futures.append(self.pool.submit(self.one, rng.choice(self.queries)))
            k += 1
        return [f.result() for f in futures]


def bulk_phase(port, path, clients, seconds, docs_for, probe=None, rng=None):
    """`clients` threads send 64-document requests back to back for `seconds` (after a 2 s
    ramp); documents/s credits each request's documents to the window in proportion to the
    part of its time that fell inside it (whole requests would count in steps of 64)."""
    stop_at = [None]
    done = []  # (start, finish, docs)
    lock = threading.Lock()
    errors = []

    def worker(seed):
        c = Client(port, path)
        r = random.Random(seed)
        while stop_at[0] is None or time.perf_counter() < stop_at[0]:
            docs = docs_for(r)
            t = time.perf_counter()
            try:
                c.embed(docs)
            except Exception as e:  # counted, and the phase goes on
                errors.append(str(e))
                continue
            with lock:
                done.append((t, time.perf_counter(), len(docs)))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    time.sleep(2.0)
    t1 = time.perf_counter()
    stop_at[0] = t1 + seconds
    lat = probe.run(seconds, rng) if probe else None
    time.sleep(max(0.0, stop_at[0] - time.perf_counter()))
    t2 = time.perf_counter()
    for t in threads:
        t.join()
    docs = sum(n * max(0.0, min(b, t2) - max(a, t1)) / (b - a) for a, b, n in done if b > a)
    return docs / (t2 - t1), lat, errors


def abandoned(port, path, docs, probe_text, extra):
    """Sends `docs` and disconnects after 1 s; returns the latency of a query sent right after."""
    body = json.dumps({"input": docs, "model": NAME, **extra}).encode()
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall((f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
    time.sleep(1.0)
    s.close()
    c = Client(port, path)
    t = time.perf_counter()
    c.embed([probe_text])
    return (time.perf_counter() - t) * 1e3


def wait_idle(port, path, probe_text, baseline_ms, limit_s=120):
    c = Client(port, path)
    end = time.time() + limit_s
    while time.time() < end:
        t = time.perf_counter()
        c.embed([probe_text])
        if (time.perf_counter() - t) * 1e3 < max(3 * baseline_ms, 30):
            return True
        time.sleep(0.5)
    return False


def pct(v, q):
    v = sorted(v)
    if not v:
        return float("nan")
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def run_target(label, port, path, args, sents, out_rows):
    rng = random.Random(20)
    queries = [s for s in sents if 20 <= len(s) <= 80]
    docs_for = lambda r: documents(sents, args.doc_chars, 64, r)  # noqa: E731
    probe = Probe(port, path, queries)
    # Warm-up and token count of a bulk request (orchid reports usage; Infinity too).
    c = Client(port, path)
    tokens = c.embed(docs_for(random.Random(1)))
    for _ in range(5):
        probe.one(rng.choice(queries))
    alone = probe.run(args.phase_seconds, rng)
    row = {"target": label, "bulk_clients": 0, "probe_ms": alone, "probe_interval_s": probe.interval,
           "bulk_docs_per_s": None, "bulk_alone_docs_per_s": None, "tokens_per_bulk_request": tokens}
    out_rows.append(row)
    print(f"  {label}: probe alone p50 {pct(alone, .5):.1f} p99 {pct(alone, .99):.1f} ms", flush=True)
    for n in args.clients:
        only, _, err1 = bulk_phase(port, path, n, args.phase_seconds, docs_for)
        mixed, lat, err2 = bulk_phase(port, path, n, args.phase_seconds, docs_for, probe, rng)
        row = {"target": label, "bulk_clients": n, "probe_ms": lat, "probe_interval_s": probe.interval,
               "bulk_docs_per_s": mixed, "bulk_alone_docs_per_s": only, "errors": err1 + err2,
               "tokens_per_bulk_request": tokens}
        out_rows.append(row)
        print(f"  {label}: {n} bulk: probe p50 {pct(lat, .5):.1f} p99 {pct(lat, .99):.1f} ms, "
              f"bulk {mixed:.1f} docs/s with the probe, {only:.1f} alone"
              + (f" ({len(err1 + err2)} errors)" if err1 or err2 else ""), flush=True)
    base = pct(alone, .5)
    times = []
    for i in range(args.abandon_reps):
        docs = documents(sents, args.abandon_chars, 512, random.Random(100 + i))
        # Cut at the model's 256 tokens (orchid refuses longer inputs unless asked to truncate;
        # Infinity truncates on its own).
        extra = {} if label == "infinity" else {"truncate": True}
        ms = abandoned(port, path, docs, rng.choice(queries), extra)
        times.append(ms)
        print(f"  {label}: query after an abandoned 512-document request: {ms:.0f} ms", flush=True)
        if not wait_idle(port, path, rng.choice(queries), base):
            print(f"  {label}: still busy 120 s after the abandoned request", flush=True)
    out_rows.append({"target": label, "abandoned_query_ms": times})


def alternate(args, sents):
    """Bulk alone, `serve` and `serve --scheduling fcfs` both running, phases alternating between
    them (the host's drift then lands on both): the throughput cost of priority scheduling."""
    docs_for = lambda r: documents(sents, args.doc_chars, 64, r)  # noqa: E731
    ports = {"serve": free_port(), "fcfs": free_port()}
    procs = []
    out = {"serve": [], "fcfs": []}
    try:
        for label, port in ports.items():
            extra = ["--scheduling", "fcfs"] if label == "fcfs" else []
            procs.append(start([str(ORCHID), "serve", "--model", str(MODEL), "--port", str(port)]
                               + extra + args.engine_args.split(),
                               f"http://127.0.0.1:{port}/health", f"alt-{label}"))
        for rnd in range(args.alternate_rounds):
            for label, port in ports.items():
                d, _, _ = bulk_phase(port, "/v1/embeddings", 2, args.alternate_seconds, docs_for)
                out[label].append(d)
                print(f"  alternating round {rnd}: {label} bulk alone {d:.1f} docs/s", flush=True)
    finally:
        for p in procs:
            stop(p)
    return out


def machine():
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                   if l.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor()
    flags = open("/proc/cpuinfo").read()
    isa = "AVX-512" if " avx512f" in flags else "AVX2" if " avx2" in flags else "no AVX2"
    return f"{cpu}, {os.cpu_count()} cores, {isa}"


def report(rows, args, out, logs):
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                           capture_output=True, text=True).stdout.strip()
    lines = [f"# Mixed load: a query probe under bulk indexing ({datetime.date.today()})", "",
             f"- machine: {machine()} (shared and noisy: read medians and ratios)",
             f"- commit: {commit}{' (with uncommitted changes)' if dirty else ''}",
             f"- model: {NAME}; probe: one STS-B sentence every 0.2 s, open loop; bulk client: "
             f"64 documents of ~{args.doc_chars} characters per request, back to back; "
             f"{args.phase_seconds} s per phase",
             "- command: `bench/serving/mixed_load.sh " + " ".join(sys.argv[1:]) + "`", ""]
    for label, line in logs.items():
        lines.append(f"- {label}: {line}")
    lines += ["", "| target | bulk clients | probe p50 ms | probe p99 ms | probe max ms | bulk docs/s "
              "(with probe) | bulk docs/s alone | with / alone |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "probe_ms" not in r:
            continue
        lat = r["probe_ms"]
        with_p, only = r["bulk_docs_per_s"], r["bulk_alone_docs_per_s"]
        lines.append(f"| {r['target']} | {r['bulk_clients']} | {pct(lat, .5):.1f} | "
                     f"{pct(lat, .99):.1f} | {max(lat):.1f} | "
                     + (f"{with_p:.1f} | {only:.1f} | {with_p / only:.2f} |" if only else "– | – | – |"))
    tokens = next((r["tokens_per_bulk_request"] for r in rows if r.get("tokens_per_bulk_request")), 0)
    lines += ["", f"Bulk requests held {tokens} tokens ({tokens / 64:.0f} per document) as counted "
              "by the first target's tokenizer.", "",
              "Query sent right after a client abandoned a 512-document request (256 tokens "
              "each) 1 s after sending it:", "", "| target | latency ms (each try) |", "|---|---|"]
    for r in rows:
        if "abandoned_query_ms" in r:
            lines.append(f"| {r['target']} | " + ", ".join(f"{v:.0f}" for v in r["abandoned_query_ms"])
                         + " |")
    alt = next((r["alternating"] for r in rows if "alternating" in r), None)
    if alt and alt["serve"] and alt["fcfs"]:
        s_med, f_med = statistics.median(alt["serve"]), statistics.median(alt["fcfs"])
        lines += ["", f"Bulk alone (2 clients), `serve` and `serve --scheduling fcfs` alternating "
                  f"{len(alt['serve'])} times ({args.alternate_seconds:.0f} s each, both servers "
                  f"up): medians {s_med:.1f} vs {f_med:.1f} docs/s, **{s_med / f_med:.2f}x** "
                  f"(serve: {', '.join(f'{v:.1f}' for v in alt['serve'])}; fcfs: "
                  f"{', '.join(f'{v:.1f}' for v in alt['fcfs'])})."]
    fcfs = {r["bulk_clients"]: r for r in rows if r.get("target") == "fcfs" and "probe_ms" in r}
    serve = {r["bulk_clients"]: r for r in rows if r.get("target") == "serve" and "probe_ms" in r}
    if fcfs and serve:
        lines += ["", "Bulk throughput alone in the table above, priority scheduling (serve) vs first "
                  "come first served (fcfs), phases minutes apart:", ""]
        for n in sorted(set(fcfs) & set(serve)):
            if n and fcfs[n]["bulk_alone_docs_per_s"]:
                lines.append(f"- {n} clients: {serve[n]['bulk_alone_docs_per_s']:.1f} vs "
                             f"{fcfs[n]['bulk_alone_docs_per_s']:.1f} docs/s "
                             f"({serve[n]['bulk_alone_docs_per_s'] / fcfs[n]['bulk_alone_docs_per_s']:.2f}x)")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    with open(out.with_suffix(".jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    # The charts (bench/plots.py): probe p99 and bulk docs/s against bulk clients (.png), and
    # every probe's latency over time (-probe.png).
    plot_after_run(out.with_suffix(".jsonl"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--targets", default="serve,gateway,fcfs,infinity")
    ap.add_argument("--clients", default="1,2,4")
    ap.add_argument("--phase-seconds", type=float, default=20)
    ap.add_argument("--abandon-reps", type=int, default=3)
    ap.add_argument("--doc-chars", type=int, default=600, help="~130 tokens of STS-B text")
    ap.add_argument("--abandon-chars", type=int, default=1200,
                    help="cut to the model's 256 tokens")
    ap.add_argument("--alternate-rounds", type=int, default=5,
                    help="serve vs fcfs bulk-alone phases, alternating (0: none)")
    ap.add_argument("--alternate-seconds", type=float, default=15)
    ap.add_argument("--engine-args", default="",
                    help='added to every orchid serve / worker, e.g. "--device cuda" (workers then '
                         "keep their default threads)")
    ap.add_argument("--out-dir", default=str(REPO / "bench" / "results"))
    args = ap.parse_args()
    args.clients = [int(c) for c in args.clients.split(",") if c]
    sents = sentences()
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(args.out_dir) / f"mixed-load-{stamp}"
    rows, logs = [], {}
    engine_args = args.engine_args.split()
    for label in args.targets.split(","):
        print(f"{label}:", flush=True)
        procs = []
        try:
            port = free_port()
            path = "/v1/embeddings"
            if label in ("serve", "fcfs"):
                extra = ["--scheduling", "fcfs"] if label == "fcfs" else []
                procs.append(start([str(ORCHID), "serve", "--model", str(MODEL), "--port", str(port)]
                                   + extra + engine_args, f"http://127.0.0.1:{port}/health", label))
            elif label == "gateway":
                backends = []
                for i in range(2):
                    wp, mp = free_port(), free_port()
                    threads = [] if engine_args else ["--threads", "1"]
                    procs.append(start([str(ORCHID), "worker", "--model", str(MODEL), *threads,
                                        "--listen", f"127.0.0.1:{wp}", "--metrics-listen",
                                        f"127.0.0.1:{mp}", *engine_args],
                                       f"http://127.0.0.1:{mp}/metrics", f"worker{i}"))
                    backends += ["--backend", f"127.0.0.1:{wp}"]
                procs.append(start([str(ORCHID), "gateway", "--listen", f"127.0.0.1:{port}",
                                    "--model", str(MODEL)] + backends,
                                   f"http://127.0.0.1:{port}/health", label))
            elif label == "infinity":
                if not INFINITY.exists():
                    print("  Infinity is not installed (bench/serving/mixed_load.sh installs it): skipped")
                    continue
                path = "/embeddings"
                procs.append(start([str(INFINITY), "v2", "--model-id", str(MODEL),
                                    "--served-model-name", NAME, "--port", str(port), "--engine",
                                    "torch", "--device", "cpu", "--dtype", "float32",
                                    "--no-bettertransformer"],
                                   f"http://127.0.0.1:{port}/health", label, timeout=600))
            else:
                sys.exit(f"unknown target {label}")
            for name in [label, "worker0"] if label == "gateway" else [label]:
                log = Path(f"/tmp/orchid-bench-{name}.log")
                m = re.search(r"bulk batches sized for .*", log.read_text()) if log.exists() else None
                if m:
                    logs[f"{label} ({name})" if name != label else label] = m.group(0).split("; measured")[0]
            run_target(label, port, path, args, sents, rows)
        finally:
            for p in reversed(procs):
                if p is not None:
                    stop(p)
    targets = args.targets.split(",")
    if args.alternate_rounds > 0 and "serve" in targets and "fcfs" in targets:
        print("serve vs fcfs, bulk alone, alternating:", flush=True)
        rows.append({"alternating": alternate(args, sents)})
    report(rows, args, out, logs)
    print(f"wrote {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
