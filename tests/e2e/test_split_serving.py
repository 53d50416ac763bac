"""Split serving on loopback (issue 4): `orchid gateway` in front of three `orchid worker`
processes. Results identical to `orchid serve`; order kept across chunks; zero failed client
requests when a worker is killed -9 under load (chunks retried elsewhere) and traffic returning
once it restarts (also with each worker in its own network namespace, at its own address, as
real hosts would be); SIGTERM on a worker lets its in-flight requests complete; 429 on overload
and 503 with no healthy worker, with JSON bodies; every /metrics passes `promtool check metrics`."""
import ctypes
import os
import platform
import shutil
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import requests

from support import (LONG_INDEX, ORCHID_MODEL, SENTENCES, SHORT, Gateway, OrchidProcess,
                     OrchidServer, Worker, assert_close_to_reference, free_port, metric, rows,
                     wait_healthy)

SYS_TGKILL = 234  # x86-64


def embed(url, inputs, **kw):
    r = requests.post(f"{url}/v1/embeddings", json={"input": inputs, "encoding_format": "float",
                                                     **kw}, timeout=60)
    assert r.status_code == 200, r.text
    return rows(r.json())


@pytest.fixture(scope="module")
def cluster():
    workers = [Worker() for _ in range(3)]
    gw = Gateway(workers, "--chunk-tokens", "64")
    yield workers, gw
    assert gw.proc.stop() == 0, gw.proc.log_text()
    for w in workers:
        w.proc.stop()


def test_results_identical_to_serve(cluster, server):
    _, gw = cluster
    inputs = [SENTENCES[i] for i in SHORT]
    via_gateway = embed(gw.url, inputs)
    via_serve = embed(server.url, inputs)
    assert via_gateway.shape == via_serve.shape
    # Same engine, same batch-independent kernels: the rows agree to float precision.
    assert np.abs(via_gateway - via_serve).max() <= 1e-6
    assert_close_to_reference(via_gateway, SHORT, "gateway")


def test_order_kept_across_chunks_and_replicas(cluster):
    workers, gw = cluster
    before = [metric(w.metrics(), "orchid_worker_requests_total") for w in workers]
    chunks_before = metric(gw.metrics(), "orchid_gateway_chunks_total")
    indices = SHORT
    got = embed(gw.url, [SENTENCES[i] for i in indices])
    assert_close_to_reference(got, indices, "every input through the gateway, chunked")
    chunks = metric(gw.metrics(), "orchid_gateway_chunks_total") - chunks_before
    assert chunks > 10, chunks  # ~ 98 inputs × 9.5 tokens / 64
    after = [metric(w.metrics(), "orchid_worker_requests_total") for w in workers]
    assert sum(1 for b, a in zip(before, after) if a > b) >= 2, (before, after)
    # Pre-tokenized input and dimensions go through the same path.
    ids = requests.post(f"{gw.url}/v1/embeddings",
                        json={"input": [[101, 7592, 2088, 102]], "dimensions": 8,
                              "encoding_format": "float"}, timeout=30).json()
    v = np.asarray(ids["data"][0]["embedding"])
    assert v.shape == (8,) and abs(np.linalg.norm(v) - 1) < 1e-5


def test_long_input_needs_truncate_through_gateway(cluster):
    _, gw = cluster
    r = requests.post(f"{gw.url}/v1/embeddings", json={"input": SENTENCES[LONG_INDEX]}, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["code"] == "context_length_exceeded"


def load(url, n_requests, clients, on_progress=None):
    """n_requests batch-1 requests from `clients` threads; returns the failures."""
    failures = []
    done = [0]
    lock = threading.Lock()

    def one(i):
        text = SENTENCES[SHORT[i % len(SHORT)]]
        try:
            r = requests.post(f"{url}/v1/embeddings", json={"input": text}, timeout=60)
            ok = r.status_code == 200
            err = None if ok else f"{r.status_code} {r.text[:200]}"
        except requests.RequestException as e:
            err = repr(e)
        with lock:
            done[0] += 1
            if err:
                failures.append(err)
            n = done[0]
        if on_progress:
            on_progress(n)

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(one, range(n_requests)))
    return failures


def kill9_under_load(workers, gw, report, what):
    """2000 requests from 16 clients; workers[1] is killed -9 after 400 of them. Not one request
    may fail; the victim leaves the rotation, and takes traffic again once restarted."""
    victim = workers[1]
    killed = threading.Event()

    def kill_midway(n):
        if n == 400 and not killed.is_set():
            killed.set()
            victim.proc.proc.kill()  # SIGKILL: no goodbye

    t0 = time.monotonic()
    failures = load(gw.url, 2000, 16, kill_midway)
    elapsed = time.monotonic() - t0
    assert killed.is_set()
    assert failures == [], f"{len(failures)} failed requests, e.g. {failures[:3]}"
    retries = metric(gw.metrics(), "orchid_gateway_chunk_retries_total")
    report.append((what,
                   f"2000 requests / 16 clients in {elapsed:.1f}s, 0 failed, {retries:.0f} retried"))
    assert metric(gw.metrics(), "orchid_gateway_replica_healthy",
                  replica=victim.address) == 0
    victim.proc.proc.wait()
    victim.start()  # same address
    deadline = time.monotonic() + 30
    while metric(gw.metrics(), "orchid_gateway_replica_healthy", replica=victim.address) != 1:
        assert time.monotonic() < deadline, "restarted worker never came back into rotation"
        time.sleep(0.1)
    assert load(gw.url, 200, 8) == []
    assert metric(victim.metrics(), "orchid_worker_requests_total") > 0, "no traffic returned"


def test_kill9_under_load_loses_nothing_and_traffic_returns(cluster, report):
    workers, gw = cluster
    kill9_under_load(workers, gw, report, "split serving kill -9")


@pytest.fixture
def namespaces():
    """Three network namespaces, each joined to this one by a veth pair: (name, worker address).
    Skips where they cannot be made (not root, or no CAP_NET_ADMIN in a container)."""
    if shutil.which("ip") is None:
        pytest.skip("network namespaces: the `ip` command (iproute2) is not installed")
    tag = f"{os.getpid() % 100000}"
    subnet = 100 + os.getpid() % 100
    made = []

    def ip(*args):
        return subprocess.run(["ip", *args], capture_output=True, text=True, check=True)

    try:
        try:
            for i in range(3):
                ns, outer, inner = f"orchid-e2e-{tag}-{i}", f"oe{tag}h{i}", f"oe{tag}w{i}"
                ip("netns", "add", ns)
                made.append(ns)
                ip("link", "add", outer, "type", "veth", "peer", "name", inner)
                ip("link", "set", inner, "netns", ns)
                ip("addr", "add", f"10.{subnet}.{i}.1/24", "dev", outer)
                ip("link", "set", outer, "up")
                ip("netns", "exec", ns, "ip", "addr", "add", f"10.{subnet}.{i}.2/24", "dev", inner)
                ip("netns", "exec", ns, "ip", "link", "set", inner, "up")
                ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
        except subprocess.CalledProcessError as e:
            pytest.skip(f"network namespaces cannot be made here: `{' '.join(e.cmd)}`: "
                        f"{e.stderr.strip()}")
        yield [(ns, f"10.{subnet}.{i}.2") for i, ns in enumerate(made)]
    finally:
        for ns in made:  # deleting a namespace deletes its end of the veth pair, and so the pair
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_kill9_with_workers_in_their_own_network_namespaces(namespaces, report):
    """The fault test again, with each worker in a network namespace of its own at its own
    address (10.x.i.2, reached over a veth pair), as workers on separate hosts would be."""
    workers, gw = [], None
    try:
        workers = [Worker(host=addr, wrap=("ip", "netns", "exec", ns)) for ns, addr in namespaces]
        gw = Gateway(workers, "--chunk-tokens", "64")
        kill9_under_load(workers, gw, report, "split serving kill -9, workers in netns")
    finally:
        if gw is not None:
            assert gw.proc.stop() == 0, gw.proc.log_text()
        for w in workers:
            w.proc.stop()


def test_sigterm_on_a_worker_lets_in_flight_requests_complete(cluster):
    workers, gw = cluster
    victim = workers[2]
    stopped = threading.Event()
    codes = []

    def term_midway(n):
        if n == 200 and not stopped.is_set():
            stopped.set()
            threading.Thread(target=lambda: codes.append(victim.proc.stop())).start()

    failures = load(gw.url, 800, 16, term_midway)
    assert failures == [], failures[:3]
    deadline = time.monotonic() + 30
    while not codes and time.monotonic() < deadline:
        time.sleep(0.1)
    assert codes == [0], victim.proc.log_text()
    victim.start()


def test_metrics_pass_promtool(cluster, server):
    workers, gw = cluster
    promtool = shutil.which("promtool")
    assert promtool, "promtool missing: scripts/install-deps.sh --test installs the prometheus package"
    texts = {"gateway": gw.metrics(), "worker": workers[0].metrics(),
             "serve": requests.get(f"{server.url}/metrics", timeout=10).text}
    for name, text in texts.items():
        assert "# TYPE" in text, name
        r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                           text=True)
        assert r.returncode == 0, f"{name}: {r.stdout}{r.stderr}"
    for name in ["orchid_scheduler_queued_tokens", "orchid_scheduler_batch_tokens_bucket",
                 "orchid_scheduler_queue_seconds_bucket", "orchid_scheduler_engine_seconds_bucket",
                 "orchid_worker_request_seconds_bucket"]:
        assert name in texts["worker"], name
    for name in ["orchid_http_request_seconds_bucket", "orchid_gateway_tokenize_seconds_bucket",
                 "orchid_gateway_chunks_total", "orchid_gateway_replica_outstanding_tokens"]:
        assert name in texts["gateway"], name


def test_overload_gets_429_promptly_and_recovers():
    # One small-queue worker: 256 tokens of batch, 256 of queue.
    w = Worker(None, None, "--max-batch-tokens", "256", "--max-queued-tokens", "256")
    gw = Gateway([w], "--chunk-tokens", "100000")
    try:
        text = SENTENCES[SHORT[0]]
        body = {"input": [text] * 16}
        statuses = []
        slowest = [0.0]

        def one(_):
            t = time.monotonic()
            r = requests.post(f"{gw.url}/v1/embeddings", json=body, timeout=60)
            slowest[0] = max(slowest[0], time.monotonic() - t)
            statuses.append(r.status_code)
            if r.status_code == 429:
                e = r.json()["error"]
                assert e["type"] == "rate_limit_error", e
            else:
                assert r.status_code == 200, r.text

        with ThreadPoolExecutor(32) as pool:
            list(pool.map(one, range(96)))
        assert statuses.count(429) > 0, statuses
        assert slowest[0] < 30
        embed(gw.url, [text])  # recovered
        # No healthy worker: 503 with a JSON body, and /health says so.
        w.proc.kill()
        deadline = time.monotonic() + 10
        while requests.get(f"{gw.url}/health", timeout=5).status_code != 503:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        r = requests.post(f"{gw.url}/v1/embeddings", json={"input": text}, timeout=30)
        assert r.status_code == 503 and r.json()["error"]["code"] == "unavailable", r.text
    finally:
        gw.proc.stop()
        w.proc.kill()


def test_backend_dns_finds_the_replicas():
    """--backend-dns NAME:PORT: every address the name resolves to is a replica (here
    `localhost`; an address nobody listens on, like ::1 when the worker is on 127.0.0.1, stays
    out of rotation and costs nothing)."""
    w = Worker()
    try:
        gw_proc = OrchidProcess(
            ["gateway", "--listen", "127.0.0.1:0", "--model", str(ORCHID_MODEL),
             "--health-interval", "0.2", "--dns-interval", "0.5",
             "--backend-dns", f"localhost:{w.port}"],
            ready=r"orchid gateway for .* \(port (\d+)\)", name="gateway-dns")
        url = f"http://127.0.0.1:{gw_proc.ready.group(1)}"
        try:
            wait_healthy(url, gw_proc.deadline, gw_proc)
            got = embed(url, [SENTENCES[i] for i in SHORT[:8]])
            assert_close_to_reference(got, SHORT[:8], "via --backend-dns")
            text = requests.get(f"{url}/metrics", timeout=10).text
            assert metric(text, "orchid_gateway_replica_healthy", replica=w.address) == 1
        finally:
            assert gw_proc.stop() == 0, gw_proc.log_text()
    finally:
        w.proc.stop()


def _threads_taking_sigterm(pid):
    """Threads of `pid` that do not block SIGTERM (a library's pool started before main())."""
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/status", encoding="utf-8") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        if not int(fields["SigBlk"].strip(), 16) & (1 << (signal.SIGTERM - 1)):
            out.append(int(tid))
    return out


def test_sigterm_delivered_to_any_thread_drains_cleanly():
    """The kernel hands a process-directed SIGTERM to any thread that does not block it. Threads a
    library starts while loading (OpenBLAS's pool) do not inherit the mask set in main(), so send
    SIGTERM straight to each such thread in turn (a fresh process each time): every one must drain
    and exit 0, not die of the signal's default action."""
    if platform.machine() != "x86_64":
        pytest.skip("the tgkill syscall number here is x86-64's")
    libc = ctypes.CDLL(None, use_errno=True)
    w = Worker()
    gw = None
    try:
        gw = Gateway([w])
        for proc in (gw.proc, w.proc):
            tids = _threads_taking_sigterm(proc.proc.pid)
            # The thread in WaitForStopSignal() unblocks it, so there is at least that one.
            assert tids, f"no thread of {proc.name} takes SIGTERM"
            others = [t for t in tids if t != proc.proc.pid]  # a thread other than main's
            victim = (others or tids)[0]
            assert libc.syscall(SYS_TGKILL, proc.proc.pid, victim, signal.SIGTERM) == 0
            assert proc.proc.wait(timeout=60) == 0, proc.log_text()
    finally:
        if gw is not None:
            gw.proc.kill()
        w.proc.kill()


def test_side_ports_do_not_collide_on_one_host():
    """Two workers and two `serve`s on one host, each given only its own main address: no side
    port clashes (a worker's metrics endpoint takes any free port by default, and logs it), all
    four answer /health, and a gateway in front of both workers serves."""
    workers, serves, gw = [], [], None
    try:
        for _ in range(2):
            port = free_port()
            w = OrchidProcess(["worker", "--model", str(ORCHID_MODEL), "--listen",
                               f"127.0.0.1:{port}", "--threads", "1"],
                              ready=r"orchid worker: .* on grpc .*metrics on http port (\d+)",
                              name=f"worker:{port}")
            w.address = f"127.0.0.1:{port}"
            workers.append(w)
        serves = [OrchidServer() for _ in range(2)]
        ports = {int(w.ready.group(1)) for w in workers}
        assert len(ports) == 2, [w.log_text() for w in workers]
        for p in ports:
            r = requests.get(f"http://127.0.0.1:{p}/health", timeout=10)
            assert r.status_code == 200, r.text
            assert "orchid_worker" in requests.get(f"http://127.0.0.1:{p}/metrics", timeout=10).text
        for s in serves:
            assert requests.get(s.url + "/health", timeout=10).status_code == 200
        gw = OrchidProcess(["gateway", "--listen", "127.0.0.1:0", "--model", str(ORCHID_MODEL),
                            *[a for w in workers for a in ("--backend", w.address)]],
                           ready=r"orchid gateway for .* \(port (\d+)\)", name="gateway")
        url = f"http://127.0.0.1:{gw.ready.group(1)}"
        wait_healthy(url, gw.deadline, gw)
        embed(url, [SENTENCES[SHORT[0]]])
    finally:
        if gw is not None:
            gw.stop()
        for s in serves:
            s.stop()
        for w in workers:
            w.stop()
