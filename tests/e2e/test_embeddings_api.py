"""`POST /v1/embeddings` (OpenAI) and `POST /embed` (TEI) against sentence-transformers' own
fp32 embeddings (tests/fixtures/stsb/reference_*), through the official `openai` client and raw
HTTP."""
import numpy as np
import openai
import pytest
import requests

from support import (EMBEDDINGS, LONG_INDEX, MAX_SEQ_LENGTH, MIN_COSINE, SENTENCES, SHORT,
                     OrchidServer, assert_close_to_reference, cosines, hf_tokenizer, rows)


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


def post(server, body, path="/v1/embeddings"):
    return requests.post(server.url + path, json=body, timeout=120)


def test_health(server):
    r = requests.get(server.url + "/health", timeout=10)
    assert r.status_code == 200
    assert r.json() == {"status": "ok"}


def test_models(server, model_name, client):
    r = requests.get(server.url + "/v1/models", timeout=10)
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "list"
    [m] = body["data"]
    assert m["id"] == model_name and m["object"] == "model" and m["owned_by"] == "orchid"
    assert isinstance(m["created"], int)
    assert [m.id for m in client.models.list()] == [model_name]
    assert client.models.retrieve(model_name).id == model_name
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("no-such-model")


def test_openai_client_default_base64(client, model_name):
    # The official client asks for base64 unless told otherwise, and decodes it itself.
    texts = [SENTENCES[i] for i in SHORT]
    res = client.embeddings.create(model=model_name, input=texts)
    assert res.model == model_name
    assert [d.index for d in res.data] == list(range(len(texts)))
    assert_close_to_reference([d.embedding for d in res.data], SHORT, "openai client, base64")
    expected_tokens = sum(len(e.ids) for e in hf_tokenizer().encode_batch(texts))
    assert res.usage.prompt_tokens == expected_tokens
    assert res.usage.total_tokens == expected_tokens


def test_openai_client_float(client, model_name):
    res = client.embeddings.create(model=model_name, input=SENTENCES[0], encoding_format="float")
    assert len(res.data) == 1
    assert_close_to_reference([res.data[0].embedding], [0], "openai client, float")


def test_raw_float_and_base64_are_the_same_floats(server):
    texts = [SENTENCES[i] for i in SHORT[:20]]
    f = post(server, {"input": texts, "encoding_format": "float"})
    b = post(server, {"input": texts, "encoding_format": "base64"})
    assert f.status_code == 200 and b.status_code == 200, (f.text, b.text)
    assert f.headers["Content-Type"] == "application/json"
    assert isinstance(b.json()["data"][0]["embedding"], str)
    np.testing.assert_array_equal(rows(f.json()), rows(b.json()))
    assert_close_to_reference(rows(f.json()), SHORT[:20], "raw http")


def test_model_field_is_optional(server):
    r = post(server, {"input": ["a", "b"]})
    assert r.status_code == 200
    assert len(r.json()["data"]) == 2


def test_token_ids_give_the_same_vectors_as_text(server):
    indices = SHORT[:6]
    texts = [SENTENCES[i] for i in indices]
    ids = [e.ids for e in hf_tokenizer().encode_batch(texts)]
    from_text = rows(post(server, {"input": texts}).json())
    from_ids = post(server, {"input": ids})
    assert from_ids.status_code == 200, from_ids.text
    np.testing.assert_allclose(rows(from_ids.json()), from_text, atol=1e-6)
    assert from_ids.json()["usage"]["prompt_tokens"] == sum(len(x) for x in ids)
    one = post(server, {"input": ids[0]})  # a single array of token ids
    assert one.status_code == 200, one.text
    np.testing.assert_allclose(rows(one.json())[0], from_text[0], atol=1e-6)
    assert_close_to_reference(rows(from_ids.json()), indices, "token ids")


@pytest.mark.parametrize("dims", [1, 64, 128, 384])
def test_dimensions_truncate_and_renormalise(client, model_name, dims):
    res = client.embeddings.create(model=model_name, input=[SENTENCES[i] for i in SHORT[:8]],
                                   dimensions=dims)
    got = np.array([d.embedding for d in res.data], dtype=np.float64)
    assert got.shape == (8, dims)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    ref = EMBEDDINGS[SHORT[:8], :dims].astype(np.float64)
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    assert cosines(got, ref).min() >= MIN_COSINE


def test_long_input_is_rejected_unless_truncate(server):
    long_text = SENTENCES[LONG_INDEX]
    r = post(server, {"input": ["short", long_text]})
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["param"] == "input[1]" and err["code"] == "context_length_exceeded"
    assert str(MAX_SEQ_LENGTH) in err["message"]
    r = post(server, {"input": [long_text], "truncate": True})
    assert r.status_code == 200, r.text
    assert r.json()["usage"]["prompt_tokens"] == MAX_SEQ_LENGTH
    # sentence-transformers truncates to max_seq_length too, keeping [CLS] … [SEP].
    assert_close_to_reference(rows(r.json()), [LONG_INDEX], "truncated long input")
    ids = hf_tokenizer().encode(long_text).ids
    r = post(server, {"input": [ids]})
    assert r.status_code == 400 and r.json()["error"]["param"] == "input[0]"
    assert post(server, {"input": [ids], "truncate": True}).status_code == 200


def test_tei_embed(server):
    texts = [SENTENCES[i] for i in SHORT[:5]]
    r = post(server, {"inputs": texts}, path="/embed")
    assert r.status_code == 200, r.text
    got = np.array(r.json(), dtype=np.float32)
    assert_close_to_reference(got, SHORT[:5], "TEI /embed")
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    one = post(server, {"inputs": texts[0]}, path="/embed")
    assert np.array(one.json()).shape == (1, EMBEDDINGS.shape[1])
    raw = post(server, {"inputs": texts, "normalize": False}, path="/embed")
    raw_rows = np.array(raw.json(), dtype=np.float64)
    assert np.all(np.abs(np.linalg.norm(raw_rows, axis=1) - 1.0) > 1e-3)  # not normalised
    assert_close_to_reference(raw_rows, SHORT[:5], "TEI /embed normalize=false (direction)")
    bad = post(server, {"inputs": []}, path="/embed")
    assert bad.status_code == 400
    assert set(bad.json()) == {"error", "error_type"}


def test_served_model_name_overrides_the_directory_name(model_name):
    s = OrchidServer("--served-model-name", "my-embedder")
    try:
        assert requests.get(s.url + "/v1/models", timeout=10).json()["data"][0]["id"] == "my-embedder"
        ok = requests.post(s.url + "/v1/embeddings", json={"input": "x", "model": "my-embedder"},
                           timeout=60)
        assert ok.status_code == 200 and ok.json()["model"] == "my-embedder"
        wrong = requests.post(s.url + "/v1/embeddings", json={"input": "x", "model": model_name},
                              timeout=60)
        assert wrong.status_code == 404
        assert wrong.json()["error"]["code"] == "model_not_found"
    finally:
        assert s.stop() == 0, s.log_text()


def test_tei_tokenize_and_decode(server):
    """TEI's /tokenize and /decode on the real tokenizer: the ids are the ones in TEI's own
    expectations for this model (tests/fixtures/minilm/inputs.json "tei")."""
    import json as _json
    from support import REPO
    tei = _json.load(open(REPO / "tests" / "fixtures" / "minilm" / "inputs.json"))["tei"]
    texts = list(tei)
    r = requests.post(f"{server.url}/tokenize", json={"inputs": texts}, timeout=30)
    assert r.status_code == 200, r.text
    tokens = r.json()
    assert [[t["id"] for t in seq] for seq in tokens] == [tei[t] for t in texts]
    first = tokens[0]
    assert first[0]["special"] and first[0]["start"] is None
    word = first[1]
    assert texts[0][word["start"]:word["stop"]] == word["text"] == "What"
    r = requests.post(f"{server.url}/decode", json={"ids": [tei[t] for t in texts]}, timeout=30)
    assert r.status_code == 200, r.text
    import tokenizers
    from support import ORCHID_MODEL
    ref = tokenizers.Tokenizer.from_file(str(ORCHID_MODEL / "tokenizer.json"))
    assert r.json() == ref.decode_batch([tei[t] for t in texts], skip_special_tokens=True)
    r = requests.post(f"{server.url}/tokenize", json={"inputs": 3}, timeout=30)
    assert r.status_code == 422 and r.json()["error_type"] == "Validation"


def test_prompts_from_the_model_config(tmp_path):
    """A model whose config_sentence_transformers.json has prompts (like multilingual-e5 or
    Qwen3-Embedding): prompt_name / input_type put the prompt before the text, as
    sentence-transformers' encode(prompt_name=...) does, so the result equals embedding the
    prefixed text."""
    from support import OrchidServer, model_with_prompts
    model = model_with_prompts(tmp_path / "minilm-with-prompts",
                               {"query": "query: ", "document": "passage: "})
    s = OrchidServer(model=model)
    try:
        def emb(body):
            r = requests.post(f"{s.url}/v1/embeddings", json={"encoding_format": "float", **body},
                              timeout=30)
            assert r.status_code == 200, r.text
            return np.asarray(r.json()["data"][0]["embedding"])

        text = "how much protein should a female eat"
        plain = emb({"input": f"query: {text}"})
        assert np.allclose(emb({"input": text, "input_type": "query"}), plain, atol=1e-6)
        assert np.allclose(emb({"input": text, "prompt_name": "query"}), plain, atol=1e-6)
        assert np.allclose(emb({"input": text, "input_type": "document"}),
                           emb({"input": f"passage: {text}"}), atol=1e-6)
        r = requests.post(f"{s.url}/v1/embeddings", json={"input": text, "prompt_name": "x"},
                          timeout=30)
        assert r.status_code == 400 and r.json()["error"]["param"] == "prompt_name"
    finally:
        assert s.stop() == 0


def test_tei_similarity_matches_the_reference_cosines(server):
    """TEI's POST /similarity: the cosine of the source sentence's embedding with each
    sentence's, against the same cosines of sentence-transformers' own embeddings."""
    source, others = SHORT[0], SHORT[1:40]
    r = requests.post(server.url + "/similarity", timeout=120, json={
        "inputs": {"source_sentence": SENTENCES[source],
                   "sentences": [SENTENCES[i] for i in others]}})
    assert r.status_code == 200, r.text
    got = np.asarray(r.json(), dtype=np.float64)
    ref = EMBEDDINGS.astype(np.float64)
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    expected = ref[others] @ ref[source]
    assert got.shape == expected.shape
    assert np.max(np.abs(got - expected)) < 1e-5, np.max(np.abs(got - expected))
    # Over-long sentences: refused, or cut with parameters.truncate.
    body = {"inputs": {"source_sentence": SENTENCES[source], "sentences": [SENTENCES[LONG_INDEX]]}}
    r = requests.post(server.url + "/similarity", json=body, timeout=120)
    assert r.status_code == 413 and r.json()["error_type"] == "Validation", r.text
    body["parameters"] = {"truncate": True}
    r = requests.post(server.url + "/similarity", json=body, timeout=120)
    assert r.status_code == 200 and len(r.json()) == 1, r.text


def test_openapi_document_is_valid_and_lists_the_routes(server):
    """GET /openapi.json: a valid OpenAPI 3.1 document (openapi-spec-validator) describing the
    routes this file exercises."""
    from openapi_spec_validator import validate

    r = requests.get(server.url + "/openapi.json", timeout=30)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("application/json")
    doc = r.json()
    validate(doc)
    for path in ("/v1/embeddings", "/embed", "/similarity", "/tokenize", "/v1/models", "/health"):
        assert path in doc["paths"], path

def test_api_key_guards_the_api_but_not_health_or_metrics():
    """ORCHID_API_KEY (or --api-key): the API answers 401 (OpenAI's error shape, WWW-Authenticate:
    Bearer) without the key and serves the official client that sends it; /health and /metrics
    stay open for probes and scrapers; the key never appears in the log."""
    key = "orchid-test-key-9f2c"
    s = OrchidServer(env={"ORCHID_API_KEY": key})
    try:
        url = s.url
        r = requests.post(url + "/v1/embeddings", json={"input": "hi"}, timeout=30)
        assert r.status_code == 401, r.text
        assert r.headers["WWW-Authenticate"] == "Bearer"
        assert r.json()["error"]["code"] == "invalid_api_key"
        for path in ("/embed", "/tokenize"):
            r = requests.post(url + path, json={"inputs": "hi"}, timeout=30,
                              headers={"Authorization": "Bearer " + key[:-1]})
            assert r.status_code == 401, (path, r.text)
        assert requests.get(url + "/v1/models", timeout=30).status_code == 401
        assert requests.get(url + "/health", timeout=30).status_code == 200
        assert requests.get(url + "/metrics", timeout=30).status_code == 200

        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=url + "/v1", api_key="wrong", max_retries=0).embeddings.create(
                model="all-MiniLM-L6-v2", input="hi")
        client = openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0)
        [model] = [m.id for m in client.models.list()]
        res = client.embeddings.create(model=model, input=[SENTENCES[i] for i in SHORT[:8]],
                                       encoding_format="float")
        assert_close_to_reference([d.embedding for d in res.data], SHORT[:8], "with an API key")
        r = requests.post(url + "/embed", json={"inputs": SENTENCES[0]}, timeout=30,
                          headers={"Authorization": "bearer " + key})
        assert r.status_code == 200, r.text
    finally:
        assert s.stop() == 0, s.log_text()
    assert key not in "\n".join(s.log)


def test_auto_truncate_cuts_long_inputs_unless_a_request_says_not_to():
    """--auto-truncate: the over-long text is embedded as with `truncate: true` (the reference
    is sentence-transformers' own, which truncates to max_seq_length); `truncate: false` still
    refuses it; /info says so."""
    s = OrchidServer("--auto-truncate")
    try:
        assert requests.get(s.url + "/info", timeout=30).json()["auto_truncate"] is True
        texts = [SENTENCES[LONG_INDEX], SENTENCES[SHORT[0]]]
        r = requests.post(s.url + "/v1/embeddings", json={"input": texts}, timeout=120)
        assert r.status_code == 200, r.text
        assert_close_to_reference(rows(r.json()), [LONG_INDEX, SHORT[0]], "auto-truncate")
        r = requests.post(s.url + "/embed", json={"inputs": texts[0]}, timeout=120)
        assert r.status_code == 200, r.text
        r = requests.post(s.url + "/v1/embeddings", json={"input": texts, "truncate": False},
                          timeout=120)
        assert r.status_code == 400 and r.json()["error"]["code"] == "context_length_exceeded", r.text
    finally:
        assert s.stop() == 0, s.log_text()


def test_cors_for_an_allowed_origin():
    """--cors-allow-origin: a browser's preflight (OPTIONS) gets 204 with the allowed methods and
    headers, and replies to that origin carry Access-Control-Allow-Origin; other origins don't."""
    s = OrchidServer("--cors-allow-origin", "https://app.example")
    try:
        pre = requests.options(s.url + "/v1/embeddings", timeout=30, headers={
            "Origin": "https://app.example", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type"})
        assert pre.status_code == 204, pre.text
        assert pre.headers["Access-Control-Allow-Origin"] == "https://app.example"
        assert "POST" in pre.headers["Access-Control-Allow-Methods"]
        assert "content-type" in pre.headers["Access-Control-Allow-Headers"]
        r = requests.post(s.url + "/v1/embeddings", json={"input": "hi"}, timeout=30,
                          headers={"Origin": "https://app.example"})
        assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == "https://app.example"
        r = requests.post(s.url + "/v1/embeddings", json={"input": "hi"}, timeout=30,
                          headers={"Origin": "https://evil.example"})
        assert r.status_code == 200 and "Access-Control-Allow-Origin" not in r.headers
    finally:
        assert s.stop() == 0, s.log_text()
