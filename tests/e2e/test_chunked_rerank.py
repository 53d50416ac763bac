"""Long-document reranking (issue 32 item 4): a document over the cross-encoder's window is
scored as its chunks beside the query, and its score is its best chunk's.

Acceptance: "chunked rerank identical to scoring each chunk alone". For each golden document
(tests/fixtures/rerank_chunks, made by make_golden.py with Hugging Face `tokenizers` and
sentence-transformers' CrossEncoder on PyTorch), against `orchid serve --max-chunks-per-doc`:
- the server cuts the same chunks as the reference (count, and the winner's character span);
- the chunked score equals the highest of the scores the server gives each chunk's text sent
  alone as a document, and the winner is that chunk;
- each chunk alone scores as the reference's CrossEncoder within 1e-5 (the rerank goldens'
  tolerance in test_conformance.py);
- max_chunks_per_doc on the request keeps only the first N chunks, on every rerank route, and
  bad values are refused with a 400 naming the field;
- `orchid gateway --max-chunks-per-doc` in front of a worker answers as `serve` does.
"""
import json

import numpy as np
import pytest
import requests

from support import REPO, OrchidProcess, OrchidServer, wait_healthy

GOLDEN = REPO / "tests" / "fixtures" / "rerank_chunks"
CASES = sorted(p.stem for p in GOLDEN.glob("*.json"))
ATOL = 1e-5
MANY = 1000  # the server's --max-chunks-per-doc: more than any golden document has


@pytest.fixture(scope="module", params=CASES)
def served(request):
    g = json.loads((GOLDEN / f"{request.param}.json").read_text(encoding="utf-8"))
    d = REPO / g["model"]
    if not (d / "config.json").exists():
        pytest.skip(f"{d} missing (run `make fixtures`)")
    server = OrchidServer("--max-batch-time", "0", "--threads", "1", "--max-chunks-per-doc",
                          str(MANY), model=f"m={d}")
    yield g, server
    assert server.stop() == 0, server.log_text()


def post(server, path, body):
    r = requests.post(server.url + path, json=dict(body, model="m"), timeout=120)
    assert r.status_code == 200, (path, r.text)
    return r.json()


def by_index(results):
    return {x["index"]: x for x in results}


def chunk_texts(doc):
    return [doc["text"][c["start"]:c["end"]] for c in doc["chunks"]]


def test_window_is_the_references(served):
    g, server = served
    info = requests.get(server.url + "/info", timeout=30).json()
    assert info["max_input_length"] == g["max_length"], info


def test_chunked_score_is_the_best_chunk_scored_alone(served):
    g, server = served
    docs = g["documents"]
    # The server's --max-chunks-per-doc applies: the request does not name a limit.
    chunked = by_index(post(server, "/v1/rerank", {
        "query": g["query"], "documents": [d["text"] for d in docs],
        "return_chunks": True})["results"])
    for i, doc in enumerate(docs):
        want = doc["chunks"]
        alone = by_index(post(server, "/v1/rerank", {
            "query": g["query"], "documents": chunk_texts(doc)})["results"])
        alone = [alone[k]["relevance_score"] for k in range(len(want))]
        # Each chunk alone: the reference's score.
        np.testing.assert_allclose(alone, [c["score"] for c in want], atol=ATOL, rtol=0,
                                   err_msg=f"document {i}")
        got = chunked[i]
        best = int(np.argmax(alone))
        assert got["chunk"]["count"] == len(want), (i, got)
        assert got["chunk"]["index"] == best, (i, got, alone)
        assert (got["chunk"]["start"], got["chunk"]["end"]) == (want[best]["start"],
                                                                want[best]["end"]), (i, got)
        assert got["relevance_score"] == max(alone), (i, got["relevance_score"], alone)
    assert len(docs[0]["chunks"]) > 3, "the golden's first document should need many chunks"


def test_only_the_first_chunks_on_every_route(served):
    g, server = served
    doc = g["documents"][0]
    n = 3
    assert len(doc["chunks"]) > n
    alone = by_index(post(server, "/v1/rerank", {
        "query": g["query"], "documents": chunk_texts(doc)[:n]})["results"])
    best = max(alone[k]["relevance_score"] for k in range(n))
    cohere = post(server, "/v1/rerank", {"query": g["query"], "documents": [doc["text"]],
                                         "max_chunks_per_doc": n, "return_chunks": True})
    tei = post(server, "/rerank", {"query": g["query"], "texts": [doc["text"]],
                                   "max_chunks_per_doc": n, "return_chunks": True})
    v2 = post(server, "/v2/rerank", {"query": g["query"], "documents": [doc["text"]],
                                     "max_chunks_per_doc": n, "return_chunks": True})
    for name, result, score in (("/v1/rerank", cohere["results"][0], "relevance_score"),
                                ("/rerank", tei[0], "score"),
                                ("/v2/rerank", v2["results"][0], "relevance_score")):
        assert result[score] == best, (name, result, best)
        assert result["chunk"]["count"] == n, (name, result)


def test_replies_match_the_openapi_document(served):
    """Chunked replies, `chunk` included, as /openapi.json describes each route's."""
    from jsonschema import Draft202012Validator

    g, server = served
    api = requests.get(server.url + "/openapi.json", timeout=30).json()
    texts = [d["text"] for d in g["documents"]]
    for route, body in (("/rerank", {"texts": texts}), ("/v1/rerank", {"documents": texts}),
                        ("/v2/rerank", {"documents": texts})):
        reply = post(server, route, dict(body, query=g["query"], return_chunks=True))
        items = reply if route == "/rerank" else reply["results"]
        assert all("chunk" in x for x in items), (route, reply)
        schema = api["paths"][route]["post"]["responses"]["200"]["content"]["application/json"]
        validator = Draft202012Validator(dict(schema["schema"], components=api["components"]))
        errors = [e.message for e in validator.iter_errors(reply)]
        assert not errors, (route, errors)
        # A `chunk` that broke the schema would be caught: the check is not vacuous.
        bad = json.loads(json.dumps(reply))
        (bad if route == "/rerank" else bad["results"])[0]["chunk"]["count"] = 0
        assert list(validator.iter_errors(bad)), route


def test_score_route_is_not_chunked(served):
    """vLLM's /v1/score keeps its own convention: an over-long pair is refused unless cut."""
    g, server = served
    r = requests.post(server.url + "/v1/score", json={
        "model": "m", "text_1": g["query"], "text_2": [g["documents"][0]["text"]]}, timeout=60)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "context_length_exceeded", r.text


@pytest.mark.parametrize("route,docs", [("/v1/rerank", "documents"), ("/rerank", "texts"),
                                        ("/v2/rerank", "documents")])
@pytest.mark.parametrize("value", [0, -2, 1.5, "3", True])
def test_bad_max_chunks_per_doc_is_a_400(served, route, docs, value):
    g, server = served
    r = requests.post(server.url + route, json={
        "model": "m", "query": g["query"], docs: ["a document"], "max_chunks_per_doc": value},
        timeout=60)
    assert r.status_code == 400, (route, value, r.text)
    assert "max_chunks_per_doc must be a positive integer" in r.text, r.text


def test_gateway_chunks_as_serve_does(served):
    g, server = served
    d = REPO / g["model"]
    body = {"query": g["query"], "documents": [x["text"] for x in g["documents"]],
            "return_chunks": True}
    want = post(server, "/v1/rerank", body)["results"]
    worker = OrchidProcess(["worker", "--model", str(d), "--served-model-name", "m", "--listen",
                            "127.0.0.1:0", "--threads", "1", "--max-batch-time", "0"],
                           ready=r"orchid worker: .* on grpc \S+ \(port (\d+)\)", name="worker")
    gateway = None
    try:
        gateway = OrchidProcess(
            ["gateway", "--listen", "127.0.0.1:0", "--model", f"m={d}", "--backend",
             f"m=127.0.0.1:{worker.ready.group(1)}", "--max-chunks-per-doc", str(MANY)],
            ready=r"orchid gateway for .* \(port (\d+)\)", name="gateway")
        url = f"http://127.0.0.1:{gateway.ready.group(1)}"
        wait_healthy(url, gateway.deadline, gateway)
        r = requests.post(url + "/v1/rerank", json=dict(body, model="m"), timeout=120)
        assert r.status_code == 200, r.text
        assert r.json()["results"] == want
    finally:
        if gateway is not None:
            assert gateway.stop() == 0, gateway.log_text()
        worker.stop()
