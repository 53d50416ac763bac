"""TEI's POST /embed_all (every token's last hidden state per input) and sentence-transformers'
Pooling include_prompt: false (a prompt's tokens left out of pooling), through `serve` and
through a gateway in front of a worker.

/embed_all: one row per token of each input (as many as /tokenize gives), hidden_size wide; their
mean is the model's mean-pooled /embed vector before normalisation (the same hidden states).
include_prompt: the fixture bert-instruct (tests/fixtures/models/build.py) against
sentence-transformers' own encode(prompt_name=...) (reference/bert-instruct.json, made by
make_reference.py): cosine >= 0.99999 with each named prompt and without one."""
import json

import numpy as np
import pytest
import requests

from support import ORCHID_MODEL, REPO, OrchidServer

FIXTURES = REPO / "models" / "fixtures"
REFERENCE = REPO / "tests" / "fixtures" / "models" / "reference"
TEXTS = ["A man is playing a guitar.", "Deep learning", "北京是中国的首都。"]


def check_embed_all(url):
    r = requests.post(url + "/embed_all", json={"inputs": TEXTS}, timeout=60)
    assert r.status_code == 200, r.text
    per_input = r.json()
    assert len(per_input) == len(TEXTS)
    pooled = requests.post(url + "/embed", json={"inputs": TEXTS, "normalize": False}, timeout=60)
    assert pooled.status_code == 200, pooled.text
    for text, rows, want in zip(TEXTS, per_input, pooled.json()):
        tok = requests.post(url + "/tokenize", json={"inputs": text}, timeout=30).json()[0]
        rows = np.asarray(rows, dtype=np.float64)
        assert rows.shape == (len(tok), 384), (text, rows.shape, len(tok))
        np.testing.assert_allclose(rows.mean(0), want, atol=1e-5, err_msg=text)
    one = requests.post(url + "/embed_all", json={"inputs": "x"}, timeout=60)
    assert one.status_code == 200 and len(one.json()) == 1, one.text


def check_prompts(url):
    ref = json.loads((REFERENCE / "bert-instruct.json").read_text(encoding="utf-8"))
    for prompt, want in ref["expected"].items():
        body = {"model": "instruct", "input": ref["texts"]}
        if prompt:
            body["prompt_name"] = prompt
        r = requests.post(url + "/v1/embeddings", json=body, timeout=60)
        assert r.status_code == 200, r.text
        got = np.asarray([d["embedding"] for d in r.json()["data"]], dtype=np.float64)
        want = np.asarray(want, dtype=np.float64)
        cos = (got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
        assert cos.min() >= 0.99999, (prompt or "no prompt", cos)


@pytest.fixture(scope="module")
def instruct():
    d = FIXTURES / "bert-instruct"
    if not (d / "config.json").exists():
        pytest.skip(f"{d} missing (run `make fixtures`)")
    return d


def test_embed_all_and_prompts_in_one_serve(instruct):
    server = OrchidServer("--model", f"instruct={instruct}", model=f"minilm={ORCHID_MODEL}")
    try:
        check_embed_all(server.url)
        check_prompts(server.url)
    finally:
        assert server.stop() == 0, server.log_text()


def test_embed_all_refused_for_rerankers():
    server = OrchidServer(model=FIXTURES / "bert-cross-encoder")
    try:
        r = requests.post(server.url + "/embed_all", json={"inputs": "x"}, timeout=30)
        assert r.status_code == 400 and "is a reranker" in r.text, r.text
    finally:
        assert server.stop() == 0, server.log_text()


def test_embed_all_and_prompts_behind_a_gateway(instruct):
    from test_serving_api import _start_gateway, _start_worker

    workers, gateway = [], None
    try:
        workers = [_start_worker(ORCHID_MODEL), _start_worker(instruct)]
        gateway = _start_gateway("--model", f"minilm={ORCHID_MODEL}", "--backend",
                                 f"minilm={workers[0].address}", "--model", f"instruct={instruct}",
                                 "--backend", f"instruct={workers[1].address}")
        check_embed_all(gateway.url)
        check_prompts(gateway.url)
    finally:
        if gateway is not None:
            assert gateway.stop() == 0, gateway.log_text()
        for w in workers:
            w.stop()
