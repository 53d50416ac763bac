"""Queries under bulk load (issue 20), end to end: vLLM's `priority` field is validated; a
client's deadline (X-Request-Timeout) passing behind bulk work is answered 504; a client that
disconnects mid-request frees the engine (its unstarted sequences are dropped), through `serve`
with either scheduling policy and through a gateway in front of two workers. Latency under load
is measured by bench/serving/mixed_load.py, not here."""
import json
import socket
import threading
import time

import openai
import pytest
import requests

from support import (SENTENCES, SHORT, Gateway, OrchidServer, Worker, assert_close_to_reference,
                     metric, rows)

CANCELLED = dict(reason="cancelled")


def long_documents(n):
    """n distinct texts of well over 256 tokens (cut to the model's maximum with truncate)."""
    texts = [SENTENCES[i] for i in SHORT]
    return [" ".join(texts[(i + k) % len(texts)] for k in range(40)) for i in range(n)]


def send_and_hold(port, body_json):
    """Sends a POST /v1/embeddings on a raw socket and returns the socket, unread."""
    body = json.dumps(body_json).encode()
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: 127.0.0.1\r\n"
              b"Content-Type: application/json\r\n"
              + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    return s


def wait_for(what, condition, timeout=90):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def port_of(url):
    return int(url.rsplit(":", 1)[1])


def metrics_of(url):
    return requests.get(f"{url}/metrics", timeout=10).text


def drained(url, also=lambda text: True):
    """The /metrics text once no token waits for a batch (and `also` holds), else None."""
    text = metrics_of(url)
    return text if metric(text, "orchid_scheduler_queued_tokens") == 0 and also(text) else None


def queued(url):
    return metric(metrics_of(url), "orchid_scheduler_queued_tokens") > 0


def test_priority_is_validated(server, model_name):
    url = f"{server.url}/v1/embeddings"
    for bad in ["high", 1.5, True, 2**31, -(2**31) - 1, [0]]:
        r = requests.post(url, json={"input": "a query", "priority": bad}, timeout=60)
        assert r.status_code == 400, (bad, r.text)
        err = r.json()["error"]
        assert err["param"] == "priority" and "integer" in err["message"], r.text
    for route, body in [("/embed", {"inputs": "a query", "priority": "x"}),
                        ("/rerank", {"query": "q", "texts": ["d"], "priority": 0.5}),
                        ("/v1/rerank", {"query": "q", "documents": ["d"], "priority": "1"})]:
        r = requests.post(f"{server.url}{route}", json=body, timeout=60)
        assert r.status_code == 400 and "priority" in r.text, (route, r.text)
    # Valid values change the order only, never the result.
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused")
    plain = client.embeddings.create(model=model_name, input=SENTENCES[0],
                                     encoding_format="float")
    for p in [-5, 0, 7]:
        got = client.embeddings.create(model=model_name, input=SENTENCES[0],
                                       encoding_format="float", extra_body={"priority": p})
        assert got.data[0].embedding == plain.data[0].embedding
    r = requests.post(url, json={"input": "a"}, headers={"X-Request-Timeout": "soon"}, timeout=60)
    assert r.status_code == 400 and r.json()["error"]["param"] == "X-Request-Timeout", r.text


def test_deadline_passed_behind_bulk_work_gets_504():
    s = OrchidServer()
    try:
        # ~130k tokens of bulk work (several seconds on a CPU), then a request that ranks behind
        # it (priority 10) and gives up after 0.3 s.
        bulk = send_and_hold(s.port, {"input": long_documents(512), "truncate": True})
        wait_for("the bulk request to queue", lambda: queued(s.url))
        r = requests.post(f"{s.url}/v1/embeddings", json={"input": "late", "priority": 10},
                          headers={"X-Request-Timeout": "0.3"}, timeout=60)
        assert r.status_code == 504, r.text
        assert r.json()["error"]["message"], r.text
        bulk.close()
        text = wait_for("the queue to drain", lambda: drained(s.url))
        assert metric(text, "orchid_scheduler_dropped_sequences_total", reason="deadline") == 1
        # And the server goes on serving the same values.
        got = rows(requests.post(f"{s.url}/v1/embeddings", json={
            "input": [SENTENCES[i] for i in SHORT[:4]], "encoding_format": "float"},
            timeout=60).json())
        assert_close_to_reference(got, SHORT[:4], "after a 504")
    finally:
        assert s.stop() == 0, s.log_text()


@pytest.mark.parametrize("scheduling", ["priority", "fcfs"])
def test_client_disconnecting_frees_the_engine(scheduling, report):
    s = OrchidServer("--scheduling", scheduling)
    try:
        held = send_and_hold(s.port, {"input": long_documents(512), "truncate": True})
        wait_for("the request to queue", lambda: queued(s.url))
        held.close()  # the client goes away with ~130k tokens of work queued
        t0 = time.monotonic()
        text = wait_for("the abandoned work to be dropped", lambda: drained(
            s.url, lambda t: metric(t, "orchid_scheduler_dropped_sequences_total", **CANCELLED) > 0))
        dropped = metric(text, "orchid_scheduler_dropped_sequences_total", **CANCELLED)
        # What had reached the engine ran; the rest (most of it) never did.
        assert dropped >= 256, text
        report.append((f"abandoned 512 x 256 tokens ({scheduling})",
                       f"{dropped:.0f} sequences dropped, queue empty "
                       f"{time.monotonic() - t0:.1f} s after the disconnect"))
        got = rows(requests.post(f"{s.url}/v1/embeddings", json={
            "input": [SENTENCES[i] for i in SHORT[:3]], "encoding_format": "float"},
            timeout=60).json())
        assert_close_to_reference(got, SHORT[:3], "after an abandoned request")
    finally:
        assert s.stop() == 0, s.log_text()


def test_gateway_cancels_its_worker_calls_when_the_client_disconnects():
    workers = [Worker() for _ in range(2)]
    gw = Gateway(workers)
    try:
        queued = lambda: sum(metric(w.metrics(), "orchid_scheduler_queued_tokens")  # noqa: E731
                             for w in workers)
        held = send_and_hold(port_of(gw.url), {"input": long_documents(512), "truncate": True})
        wait_for("the chunks to reach both workers",
                 lambda: all(metric(w.metrics(), "orchid_scheduler_queued_tokens") > 0
                             for w in workers))
        held.close()
        wait_for("the workers to drop the abandoned chunks", lambda: queued() == 0)
        dropped = sum(metric(w.metrics(), "orchid_scheduler_dropped_sequences_total", **CANCELLED)
                      for w in workers)
        assert dropped >= 256, dropped
        # Both replicas stay in rotation (the cancel was the gateway's, not a failure) and serve.
        health = requests.get(f"{gw.url}/health", timeout=10)
        assert health.status_code == 200, health.text
        gateway_metrics = gw.metrics()
        for w in workers:
            assert metric(gateway_metrics, "orchid_gateway_replica_healthy",
                          replica=w.address) == 1, gateway_metrics
        got = rows(requests.post(f"{gw.url}/v1/embeddings", json={
            "input": [SENTENCES[i] for i in SHORT[:5]], "encoding_format": "float"},
            timeout=60).json())
        assert_close_to_reference(got, SHORT[:5], "through the gateway after a cancel")
    finally:
        assert gw.proc.stop() == 0, gw.proc.log_text()
        for w in workers:
            w.proc.stop()


def test_queries_are_answered_while_bulk_work_waits():
    """While ~130k tokens of bulk work wait, queries keep being answered before the bulk request
    finishes (with FCFS they would wait for all of it: ~10 s on two cores)."""
    s = OrchidServer()
    try:
        done = threading.Event()
        result = {}

        def bulk():
            r = requests.post(f"{s.url}/v1/embeddings",
                              json={"input": long_documents(512), "truncate": True}, timeout=600)
            result["status"] = r.status_code
            done.set()

        t = threading.Thread(target=bulk)
        t.start()
        wait_for("the bulk request to queue", lambda: queued(s.url))
        answered_before = 0
        for i in SHORT[:5]:
            r = requests.post(f"{s.url}/v1/embeddings",
                              json={"input": SENTENCES[i], "encoding_format": "float"}, timeout=60)
            assert r.status_code == 200, r.text
            assert_close_to_reference(rows(r.json()), [i], "a query under bulk load")
            answered_before += not done.is_set()
        t.join()
        assert result["status"] == 200
        assert answered_before == 5, "queries waited for the bulk request"
        text = metrics_of(s.url)
        assert metric(text, "orchid_scheduler_queue_seconds_count", **{"class": "query"}) >= 5
        assert metric(text, "orchid_scheduler_queue_seconds_count", **{"class": "bulk"}) == 1
    finally:
        assert s.stop() == 0, s.log_text()
