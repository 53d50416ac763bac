"""Static embedding models (issue 32 item 5) served end to end: model2vec's layout and
sentence-transformers' StaticEmbedding layout, random-weight tables at real shapes that
tests/fixtures/static/build.py writes (numpy only), compared with what model2vec's
StaticModel.encode and SentenceTransformer.encode computed for the same texts
(tests/fixtures/static/reference, made by make_reference.py there): the embeddings, model2vec's
truncation (characters, then tokens, then the unknown token dropped), a text left with no token
(zeros), prompts, the per-token rows of /embed_all, /tokenize, /info and /v1/models, in `serve`
and behind a gateway."""
import importlib.util
import json
import struct

import numpy as np
import pytest
import requests

from support import REPO, OrchidServer, post

HERE = REPO / "tests" / "fixtures" / "static"
REFERENCE = HERE / "reference"


def _build_module():
    spec = importlib.util.spec_from_file_location("static_build", HERE / "build.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


BUILD = _build_module()
REF = json.loads((REFERENCE / "texts.json").read_text(encoding="utf-8"))
TEXTS = REF["texts"]
M2V_IDS = REF["model2vec_ids"]


def read_table(path):
    """The first tensor of a safetensors file written by build.py (F32), as numpy."""
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    name, t = next((k, v) for k, v in header.items() if k != "__metadata__")
    b, e = t["data_offsets"]
    return np.frombuffer(raw[8 + n + b:8 + n + e], dtype="<f4").reshape(t["shape"])


def assert_rows(got, want, what):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    zero = np.linalg.norm(want, axis=1) == 0  # texts left with no token: zeros, as the libraries
    assert not got[zero].any(), (what, np.flatnonzero(zero))
    got, want = got[~zero], want[~zero]
    cos = (got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
    assert cos.min() >= 0.99999, (what, int(cos.argmin()), cos.min())
    # Same scale too (normalised or not), not only the same direction.
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), np.linalg.norm(want, axis=1),
                               rtol=1e-5, err_msg=what)


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("static")
    BUILD.build(root)
    return {"m2v": root / "static-model2vec", "st": root / "static-st"}


@pytest.fixture(scope="module")
def server(dirs):
    s = OrchidServer("--model", f"st={dirs['st']}", model=f"m2v={dirs['m2v']}")
    yield s
    assert s.stop() == 0, s.log_text()


def embed(url, model, texts, **extra):
    r = post(url, "/v1/embeddings", {"model": model, "input": texts, **extra})
    assert r.status_code == 200, r.text
    return r.json()


def check_goldens(url):
    m2v = np.load(REFERENCE / "static-model2vec.npy")
    got = embed(url, "m2v", TEXTS, truncate=True)
    assert_rows([d["embedding"] for d in got["data"]], m2v, "model2vec")
    # usage counts the ids model2vec averages (after its cuts and without its unknown token).
    assert got["usage"]["prompt_tokens"] == sum(len(i) for i in M2V_IDS), got["usage"]
    st = np.load(REFERENCE / "static-st.npy")
    got = embed(url, "st", TEXTS)
    assert_rows([d["embedding"] for d in got["data"]], st, "sentence-transformers")


def test_embeddings_match_model2vec_and_sentence_transformers(server):
    check_goldens(server.url)


def test_model2vec_truncation(server):
    """Texts over config.json's max_length are refused unless the request truncates, as every
    orchid model's; truncating reproduces model2vec's cuts (the golden rows above), including a
    text that its character cut shortens below max_length tokens."""
    long_text = TEXTS[-5]
    r = post(server.url, "/v1/embeddings", {"model": "m2v", "input": long_text})
    assert r.status_code == 400 and r.json()["error"]["code"] == "context_length_exceeded", r.text
    words = TEXTS[-4]
    assert len(M2V_IDS[-4]) < BUILD.MODEL2VEC_MAX_LENGTH  # the character cut came first
    m2v = np.load(REFERENCE / "static-model2vec.npy")
    got = embed(server.url, "m2v", [words], truncate=True)["data"][0]["embedding"]
    assert_rows([got], m2v[-4:-3], "character cut")


def test_unknown_tokens_and_tokenize(server):
    """/tokenize shows the ids the model averages: no [CLS]/[SEP], model2vec's [UNK] dropped."""
    limit = BUILD.MODEL2VEC_MAX_LENGTH
    for i, text in enumerate(TEXTS):
        if len(M2V_IDS[i]) >= limit - 8 or len(text) > 200:
            continue  # the cuts apply: compared through the embeddings above
        r = post(server.url, "/tokenize", {"inputs": text})
        assert r.status_code == 200, r.text
        assert [t["id"] for t in r.json()[0]] == M2V_IDS[i], text
    # A text of unknown characters only leaves no token: a zero vector, as model2vec's, beside
    # the others of its request; and no token row in /embed_all.
    assert M2V_IDS[-1] == [] and TEXTS[-1] == "\U0001F355\U0001F600"
    got = embed(server.url, "m2v", [TEXTS[-1], TEXTS[0], TEXTS[-1]])["data"]
    assert [d["index"] for d in got] == [0, 1, 2]
    assert not any(got[0]["embedding"]) and not any(got[2]["embedding"]), got
    assert_rows([got[1]["embedding"]], np.load(REFERENCE / "static-model2vec.npy")[:1], "beside")
    r = post(server.url, "/embed_all", {"inputs": [TEXTS[-1], TEXTS[0]]})
    assert r.status_code == 200, r.text
    assert [len(rows) for rows in r.json()] == [0, len(M2V_IDS[0])], r.text[:200]


def test_prompts_embed_all_info(dirs):
    s = OrchidServer("--model", f"m2v={dirs['m2v']}", model=f"st={dirs['st']}")
    try:
        # TEI's /embed serves the first model; prompt_name as sentence-transformers' encode.
        r = post(s.url, "/embed", {"inputs": TEXTS[:10], "prompt_name": "query",
                                    "normalize": False})  # TEI's /embed normalises by default
        assert r.status_code == 200, r.text
        assert_rows(r.json(), np.load(REFERENCE / "static-st-query.npy"), "prompt")
        # Per-token output: the table's rows of each token.
        table = read_table(dirs["st"] / "model.safetensors")
        tok = post(s.url, "/tokenize", {"inputs": TEXTS[0]}).json()[0]
        r = post(s.url, "/embed_all", {"inputs": TEXTS[0]})
        assert r.status_code == 200, r.text
        np.testing.assert_array_equal(np.asarray(r.json()[0], dtype=np.float32),
                                      table[[t["id"] for t in tok]])
        info = requests.get(s.url + "/info", timeout=30).json()
        assert info["model_id"] == "st", info
        assert info["architecture"] == "StaticEmbedding", info
        models = {m["id"]: m for m in requests.get(s.url + "/v1/models", timeout=30).json()["data"]}
        assert models["m2v"]["task"] == "embed" and models["st"]["task"] == "embed", models
        assert models["m2v"]["max_input_length"] == BUILD.MODEL2VEC_MAX_LENGTH, models["m2v"]
        assert "max_length" in models["m2v"]["max_input_length_source"], models["m2v"]
    finally:
        assert s.stop() == 0, s.log_text()


def test_static_models_behind_a_gateway(dirs):
    from test_serving_api import _start_gateway, _start_worker

    workers, gateway = [], None
    try:
        workers = [_start_worker(dirs["m2v"]), _start_worker(dirs["st"])]
        gateway = _start_gateway("--model", f"m2v={dirs['m2v']}", "--model", f"st={dirs['st']}",
                                 "--backend", f"m2v={workers[0].address}",
                                 "--backend", f"st={workers[1].address}")
        check_goldens(gateway.url)
    finally:
        if gateway is not None:
            assert gateway.stop() == 0, gateway.log_text()
        for w in workers:
            w.stop()
