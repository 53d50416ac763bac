"""ColBERT (late interaction) through `orchid gateway` in front of two `orchid worker`s (issue 32):
the workers tell the gateway the model's late-interaction settings and token width, and every
query's attended length (its [MASK] expansion not attended to) travels with its tokens. So:
- every ColBERT route answers byte for byte as `orchid serve` of the same model does (the reply
  ids and timestamps aside), with requests cut into chunks over both workers;
- the vectors and MaxSim scores are PyLate's (the goldens of test_late_interaction.py, made by
  tests/fixtures/colbert/make_colbert.py with PyLate 1.6);
- a worker killed -9 under ColBERT load loses no request (its chunks are retried on the other),
  and answers stay identical.
"""
import json
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import requests

from support import REPO, Gateway, OrchidServer, Worker, metric
from support import post_ok as post

GOLDENS = REPO / "tests" / "fixtures" / "colbert"
RTOL = 1e-5
NAME = "colbert"


@pytest.fixture(scope="module", params=["colbert-bert", "colbert-modernbert", "colbert-xlmr",
                                               "colbert-stanford"])
def split(request):
    model = REPO / "models" / "fixtures" / request.param
    if not (model / "config.json").exists():
        pytest.fail(f"{model} missing (run `make fixtures`)")
    workers = [Worker(None, None, "--served-model-name", NAME, model=model) for _ in range(2)]
    # 64-token chunks: a request's texts spread over both workers.
    gw = Gateway(workers, "--chunk-tokens", "64", model=model)
    serve = OrchidServer("--threads", "1", model=f"{NAME}={model}")
    golden = json.loads((GOLDENS / f"{request.param}.json").read_text())
    yield golden, gw, serve, workers
    assert gw.proc.stop() == 0, gw.proc.log_text()
    assert serve.stop() == 0, serve.log_text()
    for w in workers:
        w.proc.stop()


# Reply ids and creation times differ from one answer to the next; nothing else may.
VOLATILE = re.compile(rb'"(id|created)":("[^"]*"|\d+),?')


def requests_for(golden):
    queries = [x["text"] for x in golden["queries"]]
    docs = [x["text"] for x in golden["documents"]]
    return [
        ("/embed_all", {"inputs": queries, "prompt_name": "query"}),
        ("/embed_all", {"inputs": docs}),
        ("/pooling", {"model": NAME, "input": queries, "task": "token_embed",
                      "input_type": "query"}),
        ("/pooling", {"input": docs, "input_type": "document"}),
        ("/rerank", {"query": queries[1], "texts": docs, "return_text": True}),
        ("/v1/rerank", {"model": NAME, "query": queries[0], "documents": docs, "top_n": 2}),
        ("/v2/rerank", {"model": NAME, "query": queries[2], "documents": docs}),
        ("/v1/score", {"model": NAME, "text_1": queries[0], "text_2": docs}),
        ("/v1/score", {"text_1": queries, "text_2": docs}),
    ]


def test_every_route_answers_as_serve_byte_for_byte(split):
    golden, gw, serve, workers = split
    before = [metric(w.metrics(), "orchid_worker_requests_total") for w in workers]
    for path, body in requests_for(golden):
        got = VOLATILE.sub(b"", post(gw.url, path, body).content)
        want = VOLATILE.sub(b"", post(serve.url, path, body).content)
        assert got == want, (path, got[:300], want[:300])
    after = [metric(w.metrics(), "orchid_worker_requests_total") for w in workers]
    assert all(a > b for a, b in zip(after, before)), (before, after)


def test_split_vectors_and_scores_are_pylates(split):
    golden, gw, _, _ = split
    for kind, extra in (("queries", {"prompt_name": "query"}), ("documents", {})):
        texts = [x["text"] for x in golden[kind]]
        got = post(gw.url, "/embed_all", {"inputs": texts, **extra}).json()
        for g, x in zip(got, golden[kind]):
            g, want = np.asarray(g, np.float64), np.asarray(x["vectors"], np.float64)
            assert g.shape == want.shape
            cos = (g * want).sum(1) / np.linalg.norm(g, axis=1) / np.linalg.norm(want, axis=1)
            assert cos.min() >= 0.99999, cos.min()
    docs = [x["text"] for x in golden["documents"]]
    for qi, q in enumerate(golden["queries"]):
        got = post(gw.url, "/v1/score", {"text_1": q["text"], "text_2": docs}).json()
        np.testing.assert_allclose([d["score"] for d in got["data"]], golden["scores"][qi],
                                   rtol=RTOL)
    info = requests.get(gw.url + "/info", timeout=30).json()
    assert info["similarity"] == "MaxSim"
    assert info["dimensions"] == len(golden["queries"][0]["vectors"][0])
    # Pooled embeddings are refused as `orchid serve` refuses them.
    e = post(gw.url, "/v1/embeddings", {"input": "hello"}, status=400).json()
    assert e["error"]["code"] == "model_is_multi_vector", e


def test_kill9_under_colbert_load_loses_nothing(split):
    """200 /rerank requests from 8 clients; one worker is killed -9 after 40 of them. Not one
    request may fail, and every answer is still serve's; the worker then comes back."""
    golden, gw, serve, workers = split
    docs = [x["text"] for x in golden["documents"]]
    queries = [x["text"] for x in golden["queries"]]
    want = {q: VOLATILE.sub(b"", post(serve.url, "/rerank", {"query": q, "texts": docs}).content)
            for q in queries}
    victim = workers[0]
    done, failures = [0], []
    lock = threading.Lock()
    killed = threading.Event()

    def one(i):
        q = queries[i % len(queries)]
        try:
            r = requests.post(gw.url + "/rerank", json={"query": q, "texts": docs}, timeout=60)
            err = None if r.status_code == 200 and VOLATILE.sub(b"", r.content) == want[q] \
                else f"{r.status_code} {r.text[:200]}"
        except requests.RequestException as e:
            err = repr(e)
        with lock:
            done[0] += 1
            if err:
                failures.append(err)
            if done[0] == 40 and not killed.is_set():
                killed.set()
                victim.proc.proc.kill()

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(200)))
    assert killed.is_set()
    assert failures == [], f"{len(failures)} failed, e.g. {failures[:3]}"
    victim.proc.proc.wait()
    victim.start()
    deadline = time.monotonic() + 60
    while metric(gw.metrics(), "orchid_gateway_replica_healthy", replica=victim.address) != 1:
        assert time.monotonic() < deadline, "the restarted worker never came back into rotation"
        time.sleep(0.1)
    r = post(gw.url, "/rerank", {"query": queries[0], "texts": docs})
    assert VOLATILE.sub(b"", r.content) == want[queries[0]]
