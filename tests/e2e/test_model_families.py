"""The model families added beside BERT / XLM-R / Qwen3 (issue 22), each served end to end, in one
`orchid serve` (several models, picked by the request's `model`) and behind a gateway with one
worker per model: Qwen2, Mistral and Llama decoders; Gemma 3 (EmbeddingGemma's layout, with
sentence-transformers Dense modules); DistilBERT, MPNet, RoBERTa and CamemBERT encoders and
cross-encoders; ModernBERT; NomicBERT; GTE embedders and rerankers; DeBERTa-v3 / v2 classifiers; max and weighted-mean pooling;
a sharded float16 checkpoint (e5-mistral-7b's form). Texts go through the HTTP API (the server tokenizes them); the
answers are compared with what transformers computed for the same texts
(tests/fixtures/models/reference, made by make_reference.py from the random-weight fixtures that
`make fixtures` builds). /v1/models lists each with its task, and /info describes the default."""
import csv
import json

import numpy as np
import pytest
import requests

from support import REPO, TEST_DATA, OrchidServer, post

FIXTURES = REPO / "models" / "fixtures"
REFERENCE = REPO / "tests" / "fixtures" / "models" / "reference"
EMBEDDERS = ["qwen2-embed", "mistral-embed", "llama-embed", "distilbert-embed", "mpnet-embed",
             "roberta-embed", "gemma3-embed", "distilbert-max", "distilbert-weightedmean",
             "modernbert-embed", "nomic-embed", "gte-embed",
             "mistral-sharded"]  # float16 shards and model.safetensors.index.json
SCORERS = ["distilbert-cross-encoder", "camembert-cross-encoder",  # one label: /v1/score
           "modernbert-cross-encoder", "gte-cross-encoder"]
# Named labels: /predict (the DeBERTa ones with the reference's own inputs: pairs and texts).
CLASSIFIERS = ["mpnet-cross-encoder", "deberta-classifier", "deberta-cross-encoder"]
MODELS = EMBEDDERS + SCORERS + CLASSIFIERS


def stsb(lang, n):
    with open(TEST_DATA / "stsb" / f"stsb-{lang}-test.csv", encoding="utf-8") as f:
        return [(r[0], r[1]) for r in list(csv.reader(f))[:n]]


# The texts make_reference.py encoded first, in its order.
TEXTS = [a for a, _ in stsb("en", 4) + stsb("de", 4) + stsb("zh", 4)]
PAIRS = stsb("en", 8) + stsb("de", 4)


def expected(name, n):
    with open(REFERENCE / f"{name}.json", encoding="utf-8") as f:
        return np.asarray([s["expected"] for s in json.load(f)["sequences"][:n]], dtype=np.float64)


def check_models(url):
    """Every family answers its reference through `url`."""
    listed = {m["id"]: m for m in requests.get(url + "/v1/models", timeout=30).json()["data"]}
    for name in EMBEDDERS:
        assert listed[name]["task"] == "embed", listed[name]
        r = post(url, "/v1/embeddings", {"model": name, "input": TEXTS})
        assert r.status_code == 200, (name, r.text)
        got = np.asarray([d["embedding"] for d in r.json()["data"]], dtype=np.float64)
        want = expected(name, len(TEXTS))
        cos = (got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
        assert cos.min() >= 0.99999, (name, cos)
    for name in SCORERS:
        assert listed[name]["task"] == "rerank", listed[name]
        r = post(url, "/v1/score", {"model": name, "text_1": [a for a, _ in PAIRS],
                                    "text_2": [b for _, b in PAIRS], "raw_scores": True})
        assert r.status_code == 200, (name, r.text)
        got = [d["score"] for d in r.json()["data"]]
        np.testing.assert_allclose(got, expected(name, len(PAIRS))[:, 0], atol=1e-4, err_msg=name)
    for name in CLASSIFIERS:
        labels = json.loads((FIXTURES / name / "config.json").read_text())["id2label"]
        with open(REFERENCE / f"{name}.json", encoding="utf-8") as f:
            inputs = json.load(f).get("inputs") or [list(p) for p in PAIRS]
        r = post(url, "/predict", {"model": name, "inputs": inputs, "raw_scores": True})
        assert r.status_code == 200, (name, r.text)
        want = expected(name, len(inputs))
        for i, one in enumerate(r.json()):
            got = {p["label"]: p["score"] for p in one}
            np.testing.assert_allclose([got[labels[str(j)]] for j in range(len(labels))], want[i],
                                       atol=1e-4, err_msg=f"{name} pair {i}")


def check_sparse(url, dense_url=None):
    """SPLADE through /embed_sparse: each input's non-zero terms, the reference's within 1e-4;
    the dense routes refuse the model."""
    name = "splade-bert"
    with open(REFERENCE / f"{name}.json", encoding="utf-8") as f:
        ref = json.load(f)["sequences"][:len(TEXTS)]
    r = post(url, "/embed_sparse", {"inputs": TEXTS})
    assert r.status_code == 200, r.text
    got = r.json()
    assert len(got) == len(TEXTS)
    for i, (terms, want) in enumerate(zip(got, ref)):
        indices = [t["index"] for t in terms]
        assert indices == sorted(indices) and all(t["value"] > 0 for t in terms), terms
        g = {t["index"]: t["value"] for t in terms}
        w = {int(k): v for k, v in want["expected"]}
        for k in set(g) | set(w):
            assert abs(g.get(k, 0.0) - w.get(k, 0.0)) <= 1e-4, (i, k, g.get(k), w.get(k))
    r = post(url, "/embed", {"inputs": "a"})
    assert r.status_code == 400 and "/embed_sparse" in r.text, r.text
    r = post(url, "/v1/embeddings", {"input": "a"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "model_is_sparse", r.text
    if dense_url is not None:  # a dense model refuses /embed_sparse
        r = post(dense_url, "/embed_sparse", {"inputs": "a"})
        assert r.status_code == 400 and "not a sparse" in r.text, r.text


def test_splade_embed_sparse_in_serve_and_behind_a_gateway(dirs):
    from test_serving_api import _start_gateway, _start_worker

    d = FIXTURES / "splade-bert"
    server = OrchidServer(model=f"splade={d}")
    try:
        check_sparse(server.url)
        info = requests.get(server.url + "/info", timeout=30).json()
        assert info["model_id"] == "splade", info
    finally:
        assert server.stop() == 0, server.log_text()
    worker, gateway = None, None
    try:
        worker = _start_worker(d)
        gateway = _start_gateway("--model", str(d), "--backend", worker.address)
        check_sparse(gateway.url)
    finally:
        if gateway is not None:
            assert gateway.stop() == 0, gateway.log_text()
        if worker is not None:
            worker.stop()
    dense = OrchidServer(model=f"mini={dirs['distilbert-embed']}")
    try:
        r = post(dense.url, "/embed_sparse", {"inputs": "a"})
        assert r.status_code == 400 and "not a sparse" in r.text, r.text
    finally:
        assert dense.stop() == 0, dense.log_text()


@pytest.fixture(scope="module")
def dirs():
    out = {name: FIXTURES / name for name in MODELS}
    missing = [str(d) for d in out.values() if not (d / "config.json").exists()]
    if missing:
        pytest.skip(f"{missing} missing (run `make fixtures`)")
    return out


def test_new_families_in_one_serve(dirs):
    extra = []
    for name in MODELS[1:]:
        extra += ["--model", f"{name}={dirs[name]}"]
    server = OrchidServer(*extra, model=f"{MODELS[0]}={dirs[MODELS[0]]}")
    try:
        info = requests.get(server.url + "/info", timeout=30).json()
        assert info["model_id"] == MODELS[0], info
        check_models(server.url)
    finally:
        assert server.stop() == 0, server.log_text()


def test_new_families_behind_a_gateway(dirs):
    from test_serving_api import _start_gateway, _start_worker

    workers, gateway = [], None
    try:
        args = []
        for name in MODELS:
            w = _start_worker(dirs[name])
            workers.append(w)
            args += ["--model", f"{name}={dirs[name]}", "--backend", f"{name}={w.address}"]
        gateway = _start_gateway(*args)
        check_models(gateway.url)
    finally:
        if gateway is not None:
            assert gateway.stop() == 0, gateway.log_text()
        for w in workers:
            w.stop()
