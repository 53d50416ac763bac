"""The serving API of the model-families work (issue 6) against a real `orchid serve`:
several models in one process (`--model NAME=DIR`, selected by the request's `model`; in `serve`,
and in a `gateway` fronting one replica pool per model),
quantized embedding outputs (int8 / uint8 / binary / ubinary, Cohere's embedding_types),
truncation direction, OpenAI's 2048-input limit, and the three rerank routes (/rerank,
/v1/rerank, /v1/score) agreeing with each other and with the reference scores on the
random-weight cross-encoder fixtures (models/fixtures, made by `make fixtures`)."""
import csv
import json
import time

import numpy as np
import pytest
import requests

from support import (MAX_SEQ_LENGTH, ORCHID_MODEL, REPO, SENTENCES, TEST_DATA, SHORT,
                     OrchidServer, assert_close_to_reference, hf_tokenizer, post, rows)

FIXTURES = REPO / "models" / "fixtures"
REFERENCE = REPO / "tests" / "fixtures" / "models" / "reference"


@pytest.fixture(scope="module")
def two_names():
    """The default model served twice, as `alpha` (the default) and `beta`."""
    s = OrchidServer("--model", f"beta={ORCHID_MODEL}", model=f"alpha={ORCHID_MODEL}")
    yield s
    assert s.stop() == 0, s.log_text()


def test_models_are_listed_and_selected_by_name(two_names):
    r = requests.get(two_names.url + "/v1/models", timeout=10)
    assert r.status_code == 200, r.text
    assert [m["id"] for m in r.json()["data"]] == ["alpha", "beta"]
    texts = [SENTENCES[i] for i in SHORT[:8]]
    alpha = rows(post(two_names, "/v1/embeddings", {"input": texts, "model": "alpha"}).json())
    beta = post(two_names, "/v1/embeddings", {"input": texts, "model": "beta"}).json()
    assert beta["model"] == "beta"
    default = post(two_names, "/v1/embeddings", {"input": texts}).json()
    assert default["model"] == "alpha"
    assert_close_to_reference(alpha, SHORT[:8], "model alpha")
    np.testing.assert_array_equal(alpha, rows(beta))
    np.testing.assert_array_equal(alpha, rows(default))


def test_unknown_model_is_404_listing_the_names(two_names):
    r = post(two_names, "/v1/embeddings", {"input": "x", "model": "gamma"})
    assert r.status_code == 404, r.text
    err = r.json()["error"]
    assert err["code"] == "model_not_found" and err["param"] == "model"
    assert "`alpha`" in err["message"] and "`beta`" in err["message"]


def test_an_embedding_model_refuses_rerank(two_names):
    for path, body in (("/rerank", {"query": "q", "texts": ["a"]}),
                       ("/v1/rerank", {"query": "q", "documents": ["a"], "model": "beta"})):
        r = post(two_names, path, body)
        assert r.status_code == 400, (path, r.text)
        assert "embedding model" in r.text, r.text
    # vLLM's /v1/score on an embedding model: the texts' similarity (all-MiniLM-L6-v2: cosine).
    r = post(two_names, "/v1/score", {"text_1": "q", "text_2": ["q", "a"]})
    assert r.status_code == 200, r.text
    scores = [d["score"] for d in r.json()["data"]]
    assert abs(scores[0] - 1.0) < 1e-5 and scores[1] < 1.0, scores


def test_more_than_2048_inputs_is_413(two_names):
    r = post(two_names, "/v1/embeddings", {"input": ["a"] * 2049})
    assert r.status_code == 413, r.text[:300]
    assert r.json()["error"]["code"] == "too_many_inputs"
    assert post(two_names, "/v1/embeddings", {"input": ["a"] * 2048}).status_code == 200


def st_quantize(x, precision):
    """sentence-transformers' quantize_embeddings(x, precision, ranges=[[-1]*d, [1]*d]) (and
    its calibration-free binary formats), in numpy."""
    x = np.asarray(x, dtype=np.float32)
    if precision in ("binary", "ubinary"):
        packed = np.packbits(x > 0, axis=-1)
        return packed.astype(np.int32) - 128 if precision == "binary" else packed.astype(np.int32)
    starts = np.full(x.shape[1], -1.0)
    steps = (np.full(x.shape[1], 1.0) - starts) / 255
    clipped = np.clip(x, -1.0, 1.0)
    if precision == "uint8":
        return ((clipped - starts) / steps).astype(np.uint8).astype(np.int32)
    return ((clipped - starts) / steps - 128).astype(np.int8).astype(np.int32)


def test_quantized_encodings(two_names):
    texts = [SENTENCES[i] for i in SHORT[:6]]
    floats = rows(post(two_names, "/v1/embeddings", {"input": texts, "encoding_format": "float"}).json())
    for precision in ("int8", "uint8", "binary", "ubinary"):
        r = post(two_names, "/v1/embeddings", {"input": texts, "encoding_format": precision})
        assert r.status_code == 200, r.text
        got = np.array([d["embedding"] for d in r.json()["data"]])
        np.testing.assert_array_equal(got, st_quantize(floats, precision), err_msg=precision)
    # Cohere: embeddings by type, in one reply.
    r = post(two_names, "/v1/embeddings",
             {"input": texts, "embedding_types": ["float", "int8", "ubinary"], "dimensions": 128})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["response_type"] == "embeddings_by_type" and "data" not in body
    by_type = body["embeddings"]
    assert sorted(by_type) == ["float", "int8", "ubinary"]
    f = np.array(by_type["float"], dtype=np.float32)
    assert f.shape == (6, 128)
    np.testing.assert_array_equal(np.array(by_type["int8"]), st_quantize(f, "int8"))
    np.testing.assert_array_equal(np.array(by_type["ubinary"]), st_quantize(f, "ubinary"))
    assert np.array(by_type["ubinary"]).shape == (6, 16)
    r = post(two_names, "/v1/embeddings", {"input": "x", "embedding_types": ["int4"]})
    assert r.status_code == 400 and r.json()["error"]["param"] == "embedding_types[0]"


def test_truncation_direction(two_names):
    long_text = " ".join(SENTENCES[i] for i in SHORT[:40])
    tok = hf_tokenizer()
    ids = tok.encode(long_text).ids
    assert len(ids) > MAX_SEQ_LENGTH
    for direction in ("right", "left"):
        tok.enable_truncation(MAX_SEQ_LENGTH, direction=direction)
        want = tok.encode(long_text).ids
        r = post(two_names, "/v1/embeddings", {"input": long_text, "truncate": True,
                                               "truncation_direction": direction})
        assert r.status_code == 200, r.text
        assert r.json()["usage"]["prompt_tokens"] == MAX_SEQ_LENGTH
        by_ids = post(two_names, "/v1/embeddings", {"input": [want]})
        np.testing.assert_allclose(rows(r.json()), rows(by_ids.json()), atol=1e-6,
                                   err_msg=direction)
    left = post(two_names, "/embed", {"inputs": long_text, "truncate": True,
                                      "truncation_direction": "Left"})
    right = post(two_names, "/embed", {"inputs": long_text, "truncate": True})
    assert left.status_code == 200 and right.status_code == 200
    assert not np.allclose(left.json(), right.json())
    r = post(two_names, "/v1/embeddings", {"input": long_text})
    assert r.status_code == 400 and r.json()["error"]["code"] == "context_length_exceeded"


# --- rerankers (the random-weight fixtures) ---------------------------------------------------

def stsb_pairs(n):
    with open(TEST_DATA / "stsb" / "stsb-en-test.csv", encoding="utf-8") as f:
        return [(r[0], r[1]) for r in list(csv.reader(f))[:n]]


def reranker(name):
    d = FIXTURES / name
    if not (d / "config.json").exists():
        pytest.skip(f"{d} is missing (run `make fixtures`)")
    return OrchidServer(model=f"{name}={d}")


@pytest.mark.parametrize("name", ["bert-cross-encoder", "xlmr-cross-encoder"])
def test_cross_encoder_routes_agree_with_each_other_and_the_reference(name):
    pairs = stsb_pairs(8)
    with open(REFERENCE / f"{name}.json", encoding="utf-8") as f:
        expected = [s["expected"][0] for s in json.load(f)["sequences"][:8]]
    server = reranker(name)
    try:
        # One query against many documents: every route, raw logits and activated scores.
        query = pairs[0][0]
        docs = [b for _, b in pairs]
        tei = post(server, "/rerank", {"query": query, "texts": docs, "raw_scores": True})
        assert tei.status_code == 200, tei.text
        tei_scores = {d["index"]: d["score"] for d in tei.json()}
        ranked = [d["score"] for d in tei.json()]
        assert ranked == sorted(ranked, reverse=True)
        cohere = post(server, "/v1/rerank", {"model": name, "query": query, "documents": docs,
                                             "raw_scores": True, "return_documents": True})
        assert cohere.status_code == 200, cohere.text
        results = cohere.json()["results"]
        assert all(r["document"]["text"] == docs[r["index"]] for r in results)
        cohere_scores = {r["index"]: r["relevance_score"] for r in results}
        score = post(server, "/v1/score", {"model": name, "text_1": query, "text_2": docs,
                                           "raw_scores": True})
        assert score.status_code == 200, score.text
        score_scores = {d["index"]: d["score"] for d in score.json()["data"]}
        assert tei_scores == cohere_scores == score_scores
        # Activated scores: sigmoid for a sigmoid head, the logit for an Identity one.
        act = {d["index"]: d["score"] for d in
               post(server, "/rerank", {"query": query, "texts": docs}).json()}
        config = json.loads((FIXTURES / name / "config.json").read_text())
        identity = config.get("sentence_transformers", {}).get("activation_fn", "").endswith(
            "Identity")
        for i, logit in tei_scores.items():
            want = logit if identity else 1 / (1 + np.exp(-logit))
            assert act[i] == pytest.approx(want, abs=1e-6), (i, identity)
        # The reference pairs (query_i, document_i), zipped through /v1/score.
        zipped = post(server, "/v1/score", {"text_1": [a for a, _ in pairs],
                                            "text_2": [b for _, b in pairs], "raw_scores": True})
        assert zipped.status_code == 200, zipped.text
        got = [d["score"] for d in zipped.json()["data"]]
        np.testing.assert_allclose(got, expected, atol=1e-4)
    finally:
        assert server.stop() == 0, server.log_text()


def test_qwen3_reranker_routes_agree_with_the_reference():
    pairs = stsb_pairs(8)
    with open(REFERENCE / "qwen3-reranker.json", encoding="utf-8") as f:
        expected = [s["expected"][0] for s in json.load(f)["sequences"][:8]]
    server = reranker("qwen3-reranker")
    try:
        r = post(server, "/v1/score", {"text_1": [a for a, _ in pairs],
                                       "text_2": [b for _, b in pairs], "raw_scores": True})
        assert r.status_code == 200, r.text
        got = [d["score"] for d in r.json()["data"]]
        np.testing.assert_allclose(got, expected, atol=1e-4)
        # Sigmoid of logit(yes) - logit(no) by default; the same through /v1/rerank.
        q, d = pairs[0]
        tei = post(server, "/rerank", {"query": q, "texts": [d]}).json()[0]["score"]
        assert tei == pytest.approx(1 / (1 + np.exp(-got[0])), abs=1e-6)
        cohere = post(server, "/v1/rerank", {"query": q, "documents": [d]}).json()
        assert cohere["results"][0]["relevance_score"] == tei
    finally:
        assert server.stop() == 0, server.log_text()


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_worker(model_dir):
    """`orchid worker` for model_dir on a free port; its gRPC address is in .address."""
    from support import OrchidProcess

    port = _free_port()
    w = OrchidProcess(["worker", "--model", str(model_dir), "--listen", f"127.0.0.1:{port}",
                       "--threads", "1", "--metrics-listen", f"127.0.0.1:{_free_port()}"],
                      ready=r"orchid worker: .* on grpc ", name=f"worker:{port}")
    w.address = f"127.0.0.1:{port}"
    return w


def _start_gateway(*args):
    """`orchid gateway` on a free port with `args`; ready once every model's line is logged."""
    from support import OrchidProcess, wait_healthy

    g = OrchidProcess(["gateway", "--listen", "127.0.0.1:0", *args],
                      ready=r"orchid gateway for .* \(port (\d+)\)", name="gateway")
    g.url = f"http://127.0.0.1:{g.ready.group(1)}"
    wait_healthy(g.url, g.deadline, g)
    return g


def test_cross_encoder_behind_a_gateway_scores_like_serve():
    """Split serving of a scorer: the workers' Info tells the gateway it fronts a reranker, and
    the pairs' token types cross the gRPC hop (chunked over two workers)."""
    name = "bert-cross-encoder"
    d = FIXTURES / name
    if not (d / "config.json").exists():
        pytest.skip(f"{d} is missing (run `make fixtures`)")
    pairs = stsb_pairs(8)
    body = {"text_1": [a for a, _ in pairs], "text_2": [b for _, b in pairs], "raw_scores": True}
    serve = OrchidServer(model=str(d))
    try:
        want = [x["score"] for x in post(serve, "/v1/score", body).json()["data"]]
    finally:
        serve.stop()

    workers, gateway = [], None
    try:
        workers = [_start_worker(d) for _ in range(2)]
        backends = [a for w in workers for a in ("--backend", w.address)]
        gateway = _start_gateway("--model", str(d), "--chunk-tokens", "64", *backends)
        r = post(gateway, "/v1/score", body)
        assert r.status_code == 200, r.text
        np.testing.assert_allclose([x["score"] for x in r.json()["data"]], want, atol=1e-5)
        tei = post(gateway, "/rerank", {"query": pairs[0][0], "texts": [b for _, b in pairs]})
        assert tei.status_code == 200, tei.text
        r = post(gateway, "/v1/embeddings", {"input": "a"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "model_not_an_embedder"
    finally:
        if gateway is not None:
            gateway.stop()
        for w in workers:
            w.stop()



def test_classifier_predict_matches_the_reference_in_serve_and_behind_a_gateway():
    """TEI's POST /predict on the three-label BERT classifier fixture: each input's labels,
    named from config.json's id2label, with softmax(transformers' logits) best first, for texts
    and pairs, one by one and as a batch; `serve` and a gateway with a worker alike (the label
    names cross the gRPC hop in Info). /info calls it a classifier with those labels."""
    name = "bert-classifier"
    d = FIXTURES / name
    if not (d / "config.json").exists():
        pytest.skip(f"{d} is missing (run `make fixtures`)")
    with open(REFERENCE / f"{name}.json", encoding="utf-8") as f:
        ref = json.load(f)
    labels, inputs = ref["labels"], ref["inputs"]
    logits = np.asarray([s["expected"] for s in ref["sequences"][:len(inputs)]], dtype=np.float64)
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)

    def check(one, want, raw=False):
        got = {p["label"]: p["score"] for p in one}
        assert [p["score"] for p in one] == sorted(got.values(), reverse=True), one
        np.testing.assert_allclose([got[l] for l in labels], want, atol=1e-4)

    def exercise(server):
        info = requests.get(server.url + "/info", timeout=30).json()
        assert info["model_type"] == {"classifier": {
            "id2label": {str(i): l for i, l in enumerate(labels)},
            "label2id": {l: i for i, l in enumerate(labels)}}}, info
        for i in (0, len(inputs) - 1):  # a pair, and a single (German) text
            r = post(server, "/predict", {"inputs": inputs[i]})
            assert r.status_code == 200, r.text
            check(r.json(), probs[i])
        r = post(server, "/predict", {"inputs": inputs, "raw_scores": True})
        assert r.status_code == 200, r.text
        assert len(r.json()) == len(inputs)
        for i, one in enumerate(r.json()):
            check(one, logits[i])
        # A classifier has no one relevance score: the rerank routes refuse it.
        r = post(server, "/rerank", {"query": "q", "texts": ["d"]})
        assert r.status_code == 400 and "use /predict" in r.text, r.text

    serve = OrchidServer(model=str(d))
    try:
        exercise(serve)
    finally:
        assert serve.stop() == 0, serve.log_text()
    worker, gateway = None, None
    try:
        worker = _start_worker(d)
        gateway = _start_gateway("--model", str(d), "--backend", worker.address)
        exercise(gateway)
    finally:
        if gateway is not None:
            gateway.stop()
        if worker is not None:
            worker.stop()

def test_one_gateway_fronts_several_models():
    """`orchid gateway --model NAME=DIR ... --backend NAME=HOST:PORT ...`: one replica pool per
    model, each with its own tokenizer; the request's `model` picks the pool, the first model is
    the default, and the answers are the reference's."""
    name = "bert-cross-encoder"
    d = FIXTURES / name
    if not (d / "config.json").exists():
        pytest.skip(f"{d} is missing (run `make fixtures`)")
    pairs = stsb_pairs(8)
    with open(REFERENCE / f"{name}.json", encoding="utf-8") as f:
        expected = [s["expected"][0] for s in json.load(f)["sequences"][:8]]
    workers, gateway = [], None
    try:
        workers = [_start_worker(ORCHID_MODEL), _start_worker(d), _start_worker(d)]
        gateway = _start_gateway("--model", f"mini={ORCHID_MODEL}", "--model", f"ce={d}",
                                 "--backend", f"mini={workers[0].address}",
                                 "--backend", f"ce={workers[1].address}",
                                 "--backend", f"ce={workers[2].address}", "--chunk-tokens", "64")
        # Both models' start-up lines, whichever was matched as "ready" (the second may be
        # logged a moment after the first: read on until it is).
        deadline = time.monotonic() + 30
        while (sum("orchid gateway for" in line for line in gateway.log) < 2
               and time.monotonic() < deadline):
            time.sleep(0.05)
        assert sum("orchid gateway for" in line for line in gateway.log) == 2, gateway.log_text()
        r = requests.get(gateway.url + "/v1/models", timeout=10)
        assert [(m["id"], m["task"]) for m in r.json()["data"]] == [("mini", "embed"),
                                                                     ("ce", "rerank")]
        texts = [SENTENCES[i] for i in SHORT[:8]]
        for body in ({"input": texts, "model": "mini"}, {"input": texts}):
            r = post(gateway, "/v1/embeddings", body)
            assert r.status_code == 200, r.text
            assert r.json()["model"] == "mini"
            assert_close_to_reference(rows(r.json()), SHORT[:8], "gateway, model mini")
        r = post(gateway, "/v1/score", {"model": "ce", "text_1": [a for a, _ in pairs],
                                        "text_2": [b for _, b in pairs], "raw_scores": True})
        assert r.status_code == 200, r.text
        np.testing.assert_allclose([x["score"] for x in r.json()["data"]], expected, atol=1e-4)
        r = post(gateway, "/v1/embeddings", {"input": "a", "model": "nope"})
        assert r.status_code == 404, r.text
        assert "`mini`, `ce`" in r.json()["error"]["message"]
        r = post(gateway, "/v1/embeddings", {"input": "a", "model": "ce"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "model_not_an_embedder"
        metrics = requests.get(gateway.url + "/metrics", timeout=10).text
        assert 'orchid_gateway_chunks_total{model="mini"}' in metrics, metrics
        assert 'orchid_gateway_replica_healthy{model="ce",replica="' in metrics, metrics
        assert requests.get(gateway.url + "/health", timeout=10).json() == {
            "status": "ok", "models": {"mini": "ok", "ce": "ok"}}
        # The reranker's workers die: /health says "degraded" but stays 200 (the embedder still
        # serves), the reranker's requests get 503, the embedder's are still answered.
        for w in workers[1:]:
            w.kill()
        deadline = time.monotonic() + 30
        while True:
            h = requests.get(gateway.url + "/health", timeout=10)
            if h.json()["status"] != "ok" or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert h.status_code == 200 and h.json() == {
            "status": "degraded", "models": {"mini": "ok", "ce": "unavailable"}}, h.text
        r = post(gateway, "/v1/score", {"model": "ce", "text_1": "a", "text_2": "b"})
        assert r.status_code == 503, r.text
        r = post(gateway, "/v1/embeddings", {"input": texts[:2], "model": "mini"})
        assert r.status_code == 200, r.text
    finally:
        if gateway is not None:
            assert gateway.stop() == 0, gateway.log_text()
        for w in workers:
            w.stop()


def test_gateway_refuses_backends_it_cannot_place():
    import subprocess

    from support import ORCHID_BIN

    two = ["--model", f"a={ORCHID_MODEL}", "--model", f"b={ORCHID_MODEL}"]
    for args, message in (
            (two + ["--backend", "127.0.0.1:1", "--backend", "b=127.0.0.1:2"],
             "with several models, name its model"),
            (two + ["--backend", "a=127.0.0.1:1"], "model `b` has no replicas"),
            (two + ["--backend", "a=127.0.0.1:1", "--backend", "c=127.0.0.1:2"],
             "no --model is named `c`"),
            (two + ["--backend", "a=127.0.0.1:1", "--backend", "b=127.0.0.1:2",
                    "--backend-dns", "b=localhost:2"], "model `b` has both"),
            (["--model", str(ORCHID_MODEL), "--model", str(ORCHID_MODEL), "--backend",
              "127.0.0.1:1"], "two models are named"),
            (two + ["--backend", "a=127.0.0.1:1", "--backend", "b=127.0.0.1:2",
                    "--served-model-name", "c"], "--served-model-name names a single model"),
            (["--model", "a=/nonexistent/dir", "--backend", "127.0.0.1:1"],
             "is not a directory")):
        p = subprocess.run([str(ORCHID_BIN), "gateway", "--listen", "127.0.0.1:0",
                            "--startup-timeout", "0", *args],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, (args, p.returncode, p.stdout, p.stderr)
        assert message in p.stdout + p.stderr, (args, p.stdout, p.stderr)


def test_serve_refuses_ambiguous_model_names():
    import subprocess

    from support import ORCHID_BIN

    for args, message in (
            (["--model", f"a={ORCHID_MODEL}", "--model", f"a={ORCHID_MODEL}"], "two models are named `a`"),
            (["--model", str(ORCHID_MODEL), "--model", str(ORCHID_MODEL)], "two models are named"),
            (["--model", f"a={ORCHID_MODEL}", "--model", f"b={ORCHID_MODEL}",
              "--served-model-name", "c"], "--served-model-name names a single model"),
            (["--model", "a=/nonexistent/dir"], "is not a directory")):
        p = subprocess.run([str(ORCHID_BIN), "serve", "--port", "0", *args], capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 2, (args, p.returncode, p.stdout, p.stderr)
        assert message in p.stdout + p.stderr, (args, p.stdout, p.stderr)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_serve_refuses_other_dtypes_on_cuda(dtype):
    """The CUDA engine is bfloat16 only: asking it for float32 or int8 is refused at start-up
    (before any GPU is looked for), not silently ignored."""
    import subprocess

    from support import ORCHID_BIN

    p = subprocess.run([str(ORCHID_BIN), "serve", "--port", "0", "--model", str(ORCHID_MODEL),
                        "--device", "cuda", "--dtype", dtype],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "the CUDA engine runs bfloat16 only" in p.stdout + p.stderr, (p.stdout, p.stderr)


def test_serve_refuses_bfloat16_on_blas():
    """`--gemm blas` multiplies float32 only: with --dtype bfloat16 it is a start-up error."""
    import subprocess

    from support import ORCHID_BIN

    p = subprocess.run([str(ORCHID_BIN), "serve", "--port", "0", "--model", str(ORCHID_MODEL),
                        "--gemm", "blas", "--dtype", "bfloat16"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "--gemm blas multiplies float32 only" in p.stdout + p.stderr, (p.stdout, p.stderr)


def test_dimensions_truncate_without_renormalising_on_a_model_that_does_not_normalise():
    """`dimensions` follows sentence-transformers' truncate_dim on a model without a Normalize
    module (the qwen3-bidir fixture): the first N values as they are; with `normalize: true`
    (or on a normalising model, test_embeddings_api.py) they are re-normalised, as OpenAI's."""
    name = "qwen3-bidir"
    d = FIXTURES / name
    if not (d / "config.json").exists():
        pytest.skip(f"{d} is missing (run `make fixtures`)")
    server = OrchidServer(model=f"{name}={d}")
    try:
        texts = ["the first sentence", "a second, longer sentence than the first"]
        full = post(server, "/v1/embeddings", {"model": name, "input": texts})
        assert full.status_code == 200, full.text
        full_rows = np.array([x["embedding"] for x in full.json()["data"]], dtype=np.float64)
        assert abs(np.linalg.norm(full_rows[0]) - 1.0) > 1e-3  # the model does not normalise
        cut = post(server, "/v1/embeddings", {"model": name, "input": texts, "dimensions": 8})
        assert cut.status_code == 200, cut.text
        cut_rows = np.array([x["embedding"] for x in cut.json()["data"]], dtype=np.float64)
        np.testing.assert_allclose(cut_rows, full_rows[:, :8], rtol=1e-6, atol=1e-7)
        tei = post(server, "/embed", {"inputs": texts, "dimensions": 8, "normalize": True})
        assert tei.status_code == 200, tei.text
        want = full_rows[:, :8] / np.linalg.norm(full_rows[:, :8], axis=1, keepdims=True)
        np.testing.assert_allclose(np.array(tei.json(), dtype=np.float64), want, rtol=1e-5,
                                   atol=1e-6)
    finally:
        assert server.stop() == 0, server.log_text()
