"""BGE-M3 through the HTTP API (issue 32 item 2), against what FlagEmbedding's BGEM3FlagModel
computed for the same directory (tests/fixtures/bge_m3/bge-m3.json, made by make_bge_m3.py
beside it from the fixture its build.py writes, colbert_linear.pt and sparse_linear.pt in
torch.save's format):
- /v1/embeddings and TEI's /embed give the dense vector (CLS, normalised);
- TEI's /embed_sparse gives the lexical weights (max per token id, cls/eos/pad/unk dropped),
  within 1e-5;
- /pooling (task "token_embed") and /embed_all give the ColBERT vectors (CLS dropped, </s> kept,
  normalised), cosine >= 0.99999 per vector;
- the rerank and score routes give compute_score's dense score by default, and the result that
  score_mode names with score_weights (weights_for_different_modes), within 1e-5 relative;
- what cannot be answered is a 400 that says why (score_mode on another model, bad modes and
  weights, chunked rerank).
"""
import json
import subprocess

import numpy as np
import pytest

from support import ORCHID_BIN, REPO, OrchidServer
from support import assert_rows_close as assert_rows
from support import post_json as post

GOLDEN = json.loads((REPO / "tests" / "fixtures" / "bge_m3" / "bge-m3.json").read_text())
MODEL = REPO / "models" / "fixtures" / "bge-m3"
TEXTS = [t["text"] for t in GOLDEN["texts"]]
RTOL = 1e-5
MODES = ["dense", "sparse", "colbert", "sparse+dense", "colbert+sparse+dense"]


@pytest.fixture(scope="module")
def server():
    if not (MODEL / "config.json").exists():
        pytest.fail(f"{MODEL} missing (run `make fixtures`)")
    s = OrchidServer("--threads", "1", model=f"bge-m3={MODEL}")
    yield s
    assert s.stop() == 0, s.log_text()


def test_dense_routes_give_the_dense_vector(server):
    got = post(server, "/v1/embeddings", {"model": "bge-m3", "input": TEXTS})
    assert_rows([d["embedding"] for d in got["data"]], [t["dense"] for t in GOLDEN["texts"]])
    assert got["usage"]["prompt_tokens"] == sum(len(t["input_ids"]) for t in GOLDEN["texts"])
    tei = post(server, "/embed", {"inputs": TEXTS})
    assert_rows(tei, [t["dense"] for t in GOLDEN["texts"]])


def test_embed_sparse_gives_lexical_weights(server):
    got = post(server, "/embed_sparse", {"inputs": TEXTS})
    assert len(got) == len(TEXTS)
    for g, t in zip(got, GOLDEN["texts"]):
        ids = [x["index"] for x in g]
        assert ids == sorted(ids)
        mine = {x["index"]: x["value"] for x in g}
        assert_lexical(mine, t["lexical"], t["text"])
        # The special tokens never carry a weight (<s> 0, <pad> 1, </s> 2, <unk> 3).
        assert not set(mine) & {0, 1, 2, 3}


def test_multi_vector_routes_give_colbert_vectors(server):
    got = post(server, "/pooling", {"model": "bge-m3", "input": TEXTS, "task": "token_embed"})
    assert [d["index"] for d in got["data"]] == list(range(len(TEXTS)))
    for d, t in zip(got["data"], GOLDEN["texts"]):
        assert len(d["data"]) == len(t["input_ids"]) - 1  # CLS dropped, </s> kept
        assert_rows(d["data"], t["colbert"])
    tei = post(server, "/embed_all", {"inputs": TEXTS})
    for g, t in zip(tei, GOLDEN["texts"]):
        assert_rows(g, t["colbert"])


def assert_lexical(mine, theirs, text):
    theirs = {int(k): v for k, v in theirs.items()}
    # Ids whose weight is not clearly above 0 may fall on either side of the ReLU.
    assert {k for k, v in theirs.items() if v > 1e-5} <= set(mine) <= set(theirs), text
    for k, v in mine.items():
        assert abs(v - theirs[k]) <= 1e-5 * max(1.0, abs(theirs[k])), (text, k)


def test_embed_multi_gives_all_three_from_one_request(server):
    got = post(server, "/embed_multi", {"model": "bge-m3", "input": TEXTS})
    assert got["object"] == "list" and got["model"] == "bge-m3"
    assert got["usage"]["prompt_tokens"] == sum(len(t["input_ids"]) for t in GOLDEN["texts"])
    assert_rows([d["dense_vecs"] for d in got["data"]], [t["dense"] for t in GOLDEN["texts"]])
    for d, t in zip(got["data"], GOLDEN["texts"]):
        assert d["object"] == "embedding_multi"
        assert_rows(d["colbert_vecs"], t["colbert"])
        assert_lexical({int(k): v for k, v in d["lexical_weights"].items()}, t["lexical"], t["text"])
    # Token ids give the same outputs as the text they came from.
    ids = post(server, "/embed_multi", {"input": GOLDEN["texts"][0]["input_ids"]})
    assert_lexical({int(k): v for k, v in ids["data"][0]["lexical_weights"].items()},
                   GOLDEN["texts"][0]["lexical"], TEXTS[0])
    only = post(server, "/embed_multi", {"input": TEXTS[0], "return_dense": False,
                                         "return_colbert_vecs": False})
    assert set(only["data"][0]) == {"index", "object", "lexical_weights"}
    e = post(server, "/embed_multi", {"input": "a", "return_dense": False, "return_sparse": False,
                                      "return_colbert_vecs": False}, status=400)
    assert e["error"]["param"] == "return_dense"
    e = post(server, "/embed_multi", {"input": "a", "dimensions": 8}, status=400)
    assert e["error"]["param"] == "dimensions"


def scores_of(server, route, query, passages, **extra):
    if route == "/rerank":
        r = post(server, route, {"query": query, "texts": passages, **extra})
        out = np.zeros(len(passages))
        for x in r:
            out[x["index"]] = x["score"]
        return out
    if route in ("/v1/rerank", "/v2/rerank"):
        r = post(server, route, {"model": "bge-m3", "query": query, "documents": passages,
                                 **extra})
        out = np.zeros(len(passages))
        for x in r["results"]:
            out[x["index"]] = x["relevance_score"]
        return out
    r = post(server, route, {"model": "bge-m3", "text_1": query, "text_2": passages, **extra})
    return np.asarray([d["score"] for d in r["data"]])


def expected(query, key, mode):
    return np.asarray([p[key][mode] for p in GOLDEN["pairs"] if p["query"] == query])


def passages_of(query):
    return [p["passage"] for p in GOLDEN["pairs"] if p["query"] == query]


@pytest.mark.parametrize("route", ["/rerank", "/v1/rerank", "/v2/rerank", "/v1/score"])
def test_rerank_routes_score_as_compute_score(server, route):
    queries = sorted({p["query"] for p in GOLDEN["pairs"]})
    for q in queries:
        docs = passages_of(q)
        # Default: the dense score.
        np.testing.assert_allclose(scores_of(server, route, q, docs), expected(q, "default", "dense"),
                                   rtol=RTOL, atol=1e-6)
        for mode in MODES:
            np.testing.assert_allclose(scores_of(server, route, q, docs, score_mode=mode),
                                       expected(q, "default", mode), rtol=RTOL, atol=1e-6)
            np.testing.assert_allclose(
                scores_of(server, route, q, docs, score_mode=mode, score_weights=GOLDEN["weights"]),
                expected(q, "weighted", mode), rtol=RTOL, atol=1e-6)


def test_bad_requests_are_clear_400s(server):
    body = {"query": "a", "documents": ["b"]}
    e = post(server, "/v1/rerank", {**body, "score_mode": "hybrid"}, status=400)
    assert e["error"]["param"] == "score_mode"
    # sparse+dense divides by the dense and sparse weights' sum: they may not both be 0.
    for w in ([1, 1], [1, -1, 1], [0, 0, 0], [0, 0, 1], [1, 1, 2e6], "1,1,1", [1, 1, 1, 1]):
        e = post(server, "/v1/rerank", {**body, "score_weights": w}, status=400)
        assert e["error"]["param"] == "score_weights", w
    e = post(server, "/v1/rerank", {**body, "max_chunks_per_doc": 2}, status=400)
    assert "max_chunks_per_doc" in e["error"]["message"]
    # The server keeps serving.
    post(server, "/v1/rerank", body)


def test_score_mode_on_another_model_is_refused():
    s = OrchidServer("--threads", "1")
    try:
        e = post(s, "/v1/score", {"text_1": "a", "text_2": "b", "score_mode": "colbert"}, status=400)
        assert "BGE-M3" in e["error"]["message"] and e["error"]["param"] == "score_mode"
        e = post(s, "/embed_sparse", {"inputs": "a"}, status=400)
        assert "BGE-M3" in json.dumps(e)
        e = post(s, "/embed_multi", {"input": "a"}, status=400)
        assert e["error"]["code"] == "not_a_bge_m3_model"
    finally:
        assert s.stop() == 0, s.log_text()


def test_worker_refuses_bge_m3():
    r = subprocess.run([str(ORCHID_BIN), "worker", "--model", str(MODEL), "--listen",
                        "127.0.0.1:0"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "served by `orchid serve` only" in r.stdout + r.stderr
