"""ColBERT (late interaction) models through the HTTP API (issue 32 item 1), against what PyLate
computed for the same directory (tests/fixtures/colbert/colbert-bert.json, made by
make_colbert.py beside it from the colbert-bert fixture of tests/fixtures/models/build.py):
- TEI's /embed_all and vLLM's /pooling (task "token_embed") give each text's vectors as PyLate's
  encode(is_query=...) does: queries (prompt_name / input_type "query") expanded with [MASK],
  documents without their punctuation, normalised; cosine >= 0.99999 per vector;
- /rerank, /v1/rerank, Cohere's /v2/rerank and /v1/score give MaxSim as pylate.scores.colbert_scores, within 1e-5
  relative;
- what a ColBERT model cannot answer is a 400 that says why (pooled embeddings, chunked rerank,
  token-id input, another /pooling task).
"""
import json
import subprocess

import numpy as np
import pytest
import requests

from support import ORCHID_BIN, REPO, OrchidServer
from support import assert_rows_close as assert_vectors
from support import post_json as post

GOLDENS = REPO / "tests" / "fixtures" / "colbert"
RTOL = 1e-5


@pytest.fixture(scope="module", params=["colbert-bert", "colbert-modernbert", "colbert-xlmr",
                                               "colbert-stanford"])
def served(request):
    model = REPO / "models" / "fixtures" / request.param
    if not (model / "config.json").exists():
        pytest.fail(f"{model} missing (run `make fixtures`)")
    s = OrchidServer("--threads", "1", model=f"colbert={model}")
    yield json.loads((GOLDENS / f"{request.param}.json").read_text()), s
    assert s.stop() == 0, s.log_text()


@pytest.mark.parametrize("kind", ["queries", "documents"])
def test_embed_all_matches_pylate(served, kind):
    GOLDEN, server = served
    texts = [x["text"] for x in GOLDEN[kind]]
    body = {"inputs": texts}
    if kind == "queries":
        body["prompt_name"] = "query"
    got = post(server, "/embed_all", body)
    assert len(got) == len(texts)
    for g, x in zip(got, GOLDEN[kind]):
        assert_vectors(g, x["vectors"])


def test_pooling_token_embed_matches_pylate(served):
    GOLDEN, server = served
    texts = [x["text"] for x in GOLDEN["queries"]]
    got = post(server, "/pooling", {"model": "colbert", "input": texts, "task": "token_embed",
                                    "input_type": "query"})
    assert got["object"] == "list" and got["model"] == "colbert"
    assert [d["index"] for d in got["data"]] == list(range(len(texts)))
    for d, x in zip(got["data"], GOLDEN["queries"]):
        assert d["object"] == "pooling"
        assert_vectors(d["data"], x["vectors"])
    assert got["usage"]["prompt_tokens"] == sum(len(x["input_ids"]) for x in GOLDEN["queries"])
    docs = post(server, "/pooling", {"input": GOLDEN["documents"][0]["text"]})
    assert_vectors(docs["data"][0]["data"], GOLDEN["documents"][0]["vectors"])


def test_rerank_routes_give_maxsim(served):
    GOLDEN, server = served
    docs = [x["text"] for x in GOLDEN["documents"]]
    for qi, q in enumerate(GOLDEN["queries"]):
        expected = np.asarray(GOLDEN["scores"][qi])
        tei = post(server, "/rerank", {"query": q["text"], "texts": docs, "return_text": True})
        assert sorted(r["text"] for r in tei) == sorted(docs)
        got = np.zeros(len(docs))
        for r in tei:
            got[r["index"]] = r["score"]
        np.testing.assert_allclose(got, expected, rtol=RTOL)
        assert [r["index"] for r in tei] == list(np.argsort(-expected, kind="stable"))
        cohere = post(server, "/v1/rerank", {"model": "colbert", "query": q["text"],
                                             "documents": docs, "top_n": 2})
        assert [r["index"] for r in cohere["results"]] == list(np.argsort(-expected)[:2])
        np.testing.assert_allclose([r["relevance_score"] for r in cohere["results"]],
                                   np.sort(expected)[::-1][:2], rtol=RTOL)
        v2 = post(server, "/v2/rerank", {"model": "colbert", "query": q["text"], "documents": docs})
        assert [r["index"] for r in v2["results"]] == list(np.argsort(-expected, kind="stable"))
        np.testing.assert_allclose([r["relevance_score"] for r in v2["results"]],
                                   np.sort(expected)[::-1], rtol=RTOL)
        score = post(server, "/v1/score", {"model": "colbert", "text_1": q["text"], "text_2": docs})
        np.testing.assert_allclose([d["score"] for d in score["data"]], expected, rtol=RTOL)
    # Pairs: text_1[i] against text_2[i].
    score = post(server, "/v1/score", {"text_1": [q["text"] for q in GOLDEN["queries"]],
                                       "text_2": docs})
    np.testing.assert_allclose([d["score"] for d in score["data"]],
                               [GOLDEN["scores"][i][i] for i in range(len(docs))], rtol=RTOL)


def test_info_says_late_interaction(served):
    GOLDEN, server = served
    info = requests.get(server.url + "/info", timeout=30).json()
    assert info["similarity"] == "MaxSim"
    assert info["dimensions"] == len(GOLDEN["queries"][0]["vectors"][0])


def test_what_it_cannot_answer_is_a_clear_400(served):
    _, server = served
    e = post(server, "/v1/embeddings", {"input": "hello"}, status=400)
    assert "late-interaction" in e["error"]["message"] and "/embed_all" in e["error"]["message"]
    e = post(server, "/embed", {"inputs": "hello"}, status=400)
    assert "late-interaction" in json.dumps(e)
    e = post(server, "/v1/rerank", {"query": "a", "documents": ["b"], "max_chunks_per_doc": 2},
             status=400)
    assert "max_chunks_per_doc" in e["error"]["message"]
    e = post(server, "/pooling", {"input": [[101, 102]]}, status=400)
    assert "token ids" in e["error"]["message"]
    e = post(server, "/pooling", {"input": "a", "task": "embed"}, status=400)
    assert e["error"]["param"] == "task"
    e = post(server, "/embed_all", {"inputs": "a", "prompt_name": "passage"}, status=400)
    assert "prompt_name" in json.dumps(e)


def test_pooled_only_model_gives_hidden_states_not_colbert_vectors():
    """A plain embedder's /pooling token_embed is its per-token hidden state (TEI's /embed_all
    equivalent); neither is refused, and their widths are the hidden size."""
    s = OrchidServer("--threads", "1")
    try:
        a = post(s, "/pooling", {"input": "hello world"})
        b = post(s, "/embed_all", {"inputs": "hello world"})
        np.testing.assert_allclose(a["data"][0]["data"], b[0], rtol=1e-6, atol=1e-6)
    finally:
        assert s.stop() == 0, s.log_text()


def test_markers_the_tokenizer_lacks_are_refused_at_start_up(tmp_path):
    src = REPO / "models" / "fixtures" / "colbert-bert"
    for f in src.iterdir():
        if f.name != "config_sentence_transformers.json":
            (tmp_path / f.name).symlink_to(f)
    cfg = json.loads((src / "config_sentence_transformers.json").read_text())
    cfg["query_prefix"] = "[X] "
    (tmp_path / "config_sentence_transformers.json").write_text(json.dumps(cfg))
    r = subprocess.run([str(ORCHID_BIN), "serve", "--model", str(tmp_path), "--host", "127.0.0.1",
                        "--port", "0"], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert 'query prefix "[X] " is not a token of the tokenizer' in r.stdout + r.stderr, r.stderr

