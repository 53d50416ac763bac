"""Vendor clients, unchanged, against orchid (issue 23):

- Cohere's official Python client (PyPI `cohere`): ClientV2.embed (input_type, every
  embedding_types, output_dimension, truncate, max_tokens), ClientV2.rerank (top_n), and the v1
  Client.embed;
- Hugging Face's InferenceClient (PyPI `huggingface_hub`) given the server's URL:
  feature_extraction, sentence_similarity and text_classification (what it posts to POST /).

Each runs against `orchid serve` and against `orchid gateway` in front of a worker, and each
answer must equal the native route's for the same inputs (OpenAI's /v1/embeddings, TEI's /embed,
/similarity, /predict and /rerank) within 1e-6. The embedding model is all-MiniLM-L6-v2 with
prompts added to its config_sentence_transformers.json (query / document / classification), so
that Cohere's input_type has prompts to select; the scorers are the random-weight BERT fixtures
(models/fixtures: a one-label cross-encoder, a three-label classifier).
"""

import cohere
import numpy as np
import pytest
import requests
from huggingface_hub import InferenceClient

from support import (LONG_INDEX, REPO, SENTENCES, SHORT, OrchidProcess,
                     OrchidServer, decode_base64, model_with_prompts, rows, wait_healthy)

# The cohere client's own use of pydantic's deprecated API (not ours to fix).
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:cohere")

FIXTURES = REPO / "models" / "fixtures"
PROMPTS = {"query": "query: ", "document": "passage: ", "classification": "classify: "}
TEXTS = [SENTENCES[i] for i in SHORT[:6]]
ATOL = 1e-6


class Deployment:
    """`orchid serve --model DIR`, or `orchid gateway` for DIR in front of one `orchid worker`."""

    def __init__(self, how, model_dir):
        self.name = model_dir.name  # the served name
        self.worker = None
        if how == "serve":
            self.front = OrchidServer(model=model_dir)
            self.url = self.front.url
            return
        # Port 0: the worker picks a free port and logs it (no race with other processes).
        self.worker = OrchidProcess(
            ["worker", "--model", str(model_dir), "--listen", "127.0.0.1:0", "--threads", "1"],
            ready=r"orchid worker: .* on grpc \S+ \(port (\d+)\)", name="worker")
        self.front = OrchidProcess(
            ["gateway", "--listen", "127.0.0.1:0", "--model", str(model_dir), "--backend",
             f"127.0.0.1:{self.worker.ready.group(1)}", "--health-interval", "0.2"],
            ready=r"orchid gateway for .* \(port (\d+)\)", name="gateway")
        self.url = f"http://127.0.0.1:{self.front.ready.group(1)}"
        wait_healthy(self.url, self.front.deadline, self.front)

    def post(self, path, body):
        r = requests.post(self.url + path, json=body, timeout=120)
        assert r.status_code == 200, f"{path}: {r.status_code} {r.text}"
        return r.json()

    def stop(self):
        rc = self.front.stop()
        if self.worker is not None:
            self.worker.stop()
        assert rc == 0, self.front.log_text()


def deploy(request, model_dir):
    if not (model_dir / "config.json").exists():
        pytest.skip(f"{model_dir} is missing (run `make fixtures`)")
    d = Deployment(request.param, model_dir)
    request.addfinalizer(d.stop)
    return d


@pytest.fixture(scope="module")
def prompted_model(tmp_path_factory):
    """all-MiniLM-L6-v2 (symlinked) with named prompts."""
    return model_with_prompts(tmp_path_factory.mktemp("models") / "minilm-prompts", PROMPTS)


@pytest.fixture(scope="module", params=["serve", "gateway"])
def embedder(request, prompted_model):
    return deploy(request, prompted_model)


@pytest.fixture(scope="module", params=["serve", "gateway"])
def reranker(request):
    return deploy(request, FIXTURES / "bert-cross-encoder")


@pytest.fixture(scope="module", params=["serve", "gateway"])
def classifier(request):
    return deploy(request, FIXTURES / "bert-classifier")


def cohere_v2(d):
    return cohere.ClientV2(api_key="unused", base_url=d.url, max_retries=0)


def openai_rows(d, texts, encoding_format="float", **extra):
    """/v1/embeddings' rows (quantized formats as int arrays, base64 decoded to float32)."""
    reply = d.post("/v1/embeddings", {"input": texts, "encoding_format": encoding_format, **extra})
    if encoding_format in ("float", "base64"):
        return rows(reply), reply["usage"]["prompt_tokens"]
    return np.asarray([x["embedding"] for x in reply["data"]]), reply["usage"]["prompt_tokens"]


def tei_embed(d, inputs, **extra):
    return np.asarray(d.post("/embed", {"inputs": inputs, **extra}), dtype=np.float64)


# --- Cohere -------------------------------------------------------------------------------------

def test_cohere_v2_embed_returns_every_type_as_the_native_route(embedder):
    types = ["float", "int8", "uint8", "binary", "ubinary", "base64"]
    r = cohere_v2(embedder).embed(model=embedder.name, texts=TEXTS, input_type="search_document",
                                  embedding_types=types)
    assert r.texts == TEXTS and isinstance(r.id, str) and r.id
    assert r.response_type == "embeddings_by_type"
    assert r.meta.api_version.version == "2"
    want, tokens = openai_rows(embedder, TEXTS, input_type="document")
    assert r.meta.billed_units.input_tokens == tokens
    np.testing.assert_allclose(r.embeddings.float_, want, atol=ATOL)
    np.testing.assert_allclose([decode_base64(b) for b in r.embeddings.base64], want, atol=ATOL)
    for t in ("int8", "uint8", "binary", "ubinary"):
        got = np.asarray(getattr(r.embeddings, t))
        np.testing.assert_array_equal(got, openai_rows(embedder, TEXTS, t, input_type="document")[0])
    # Without embedding_types, v2 answers floats by type.
    r = cohere_v2(embedder).embed(model=embedder.name, texts=TEXTS[:2], input_type="search_document")
    assert r.embeddings.int8 is None
    np.testing.assert_allclose(r.embeddings.float_, want[:2], atol=ATOL)


def test_cohere_input_types_select_the_models_prompts(embedder):
    """search_query → the "query" prompt, search_document → "document", classification → the
    prompt of that name; clustering has none in this model, so the text goes as it is."""
    client = cohere_v2(embedder)
    text = TEXTS[0]
    for input_type, prefix in (("search_query", "query: "), ("search_document", "passage: "),
                               ("classification", "classify: "), ("clustering", "")):
        got = client.embed(model=embedder.name, texts=[text], input_type=input_type)
        np.testing.assert_allclose(got.embeddings.float_, tei_embed(embedder, [prefix + text]),
                                   atol=ATOL, err_msg=input_type)


def test_cohere_output_dimension_truncate_and_max_tokens(embedder):
    client = cohere_v2(embedder)
    got = client.embed(model=embedder.name, texts=TEXTS, input_type="clustering",
                       output_dimension=64)
    np.testing.assert_allclose(got.embeddings.float_, openai_rows(embedder, TEXTS, dimensions=64)[0],
                               atol=ATOL)
    # An input over the maximum: Cohere cuts its end by default (END), START cuts its start,
    # NONE refuses it.
    long = [SENTENCES[LONG_INDEX]]
    for truncate, direction in ((None, "right"), ("END", "right"), ("START", "left")):
        extra = {} if truncate is None else {"truncate": truncate}
        got = client.embed(model=embedder.name, texts=long, input_type="clustering", **extra)
        want = openai_rows(embedder, long, truncate=True, truncation_direction=direction)[0]
        np.testing.assert_allclose(got.embeddings.float_, want, atol=ATOL, err_msg=str(truncate))
    with pytest.raises(cohere.BadRequestError) as e:
        client.embed(model=embedder.name, texts=long, input_type="clustering", truncate="NONE")
    assert e.value.body["code"] == "context_length_exceeded"
    # max_tokens counts the text's own tokens: [CLS] + its first 5 + [SEP].
    ids = requests.post(embedder.url + "/tokenize", json={"inputs": TEXTS[1]},
                        timeout=30).json()[0]
    cut = [ids[0]["id"], *[t["id"] for t in ids[1:6]], ids[-1]["id"]]
    got = client.embed(model=embedder.name, texts=[TEXTS[1]], input_type="clustering",
                       max_tokens=5)
    np.testing.assert_allclose(got.embeddings.float_, openai_rows(embedder, [cut])[0], atol=ATOL)
    assert got.meta.billed_units.input_tokens == 7


def test_cohere_v1_embed_answers_floats_or_by_type(embedder):
    client = cohere.Client(api_key="unused", base_url=embedder.url, max_retries=0)
    want = openai_rows(embedder, TEXTS, input_type="query")[0]
    r = client.embed(model=embedder.name, texts=TEXTS, input_type="search_query")
    assert r.response_type == "embeddings_floats" and r.texts == TEXTS
    np.testing.assert_allclose(r.embeddings, want, atol=ATOL)
    r = client.embed(model=embedder.name, texts=TEXTS, input_type="search_query",
                     embedding_types=["float", "uint8"])
    assert r.response_type == "embeddings_by_type"
    np.testing.assert_allclose(r.embeddings.float_, want, atol=ATOL)
    np.testing.assert_array_equal(r.embeddings.uint8,
                                  openai_rows(embedder, TEXTS, "uint8", input_type="query")[0])


def test_cohere_errors_are_the_native_routes(embedder):
    client = cohere_v2(embedder)
    with pytest.raises(cohere.BadRequestError) as e:
        client.rerank(model=embedder.name, query="q", documents=["d"])
    assert e.value.body["code"] == "model_not_a_reranker" and e.value.body["param"] == "model"
    with pytest.raises(cohere.NotFoundError) as e:
        client.embed(model="embed-english-v3.0", texts=["a"], input_type="search_query")
    assert "does not exist" in e.value.body["message"]
    with pytest.raises(cohere.BadRequestError) as e:
        client.embed(model=embedder.name, images=["data:image/png;base64,AAAA"],
                     input_type="image")
    assert e.value.body["code"] == "unsupported_input"


def test_cohere_v2_rerank_scores_as_the_native_routes(reranker):
    query = "how do I keep bread fresh"
    docs = ["Store bread in a paper bag.", "The stock market fell.", "Freeze sliced bread.",
            "Bread goes stale in the fridge."]
    client = cohere_v2(reranker)
    got = client.rerank(model=reranker.name, query=query, documents=docs)
    want = reranker.post("/v1/rerank", {"query": query, "documents": docs})["results"]
    assert [x.index for x in got.results] == [x["index"] for x in want]
    np.testing.assert_allclose([x.relevance_score for x in got.results],
                               [x["relevance_score"] for x in want], atol=ATOL)
    tei = {x["index"]: x["score"] for x in reranker.post("/rerank", {"query": query, "texts": docs})}
    np.testing.assert_allclose([x.relevance_score for x in got.results],
                               [tei[x.index] for x in got.results], atol=ATOL)
    assert got.meta.billed_units.search_units == 1 and got.meta.tokens.input_tokens > 0
    top = client.rerank(model=reranker.name, query=query, documents=docs, top_n=2)
    assert [x.index for x in top.results] == [x.index for x in got.results[:2]]
    with pytest.raises(cohere.BadRequestError) as e:
        client.embed(model=reranker.name, texts=["a"], input_type="search_query")
    assert e.value.body["code"] == "model_not_an_embedder"


# --- Hugging Face's InferenceClient -------------------------------------------------------------

def test_hf_feature_extraction_is_tei_embed(embedder):
    for client in (InferenceClient(base_url=embedder.url), InferenceClient(model=embedder.url)):
        got = client.feature_extraction(TEXTS[0])
        assert got.shape == (1, 384) and got.dtype == np.float32
        np.testing.assert_allclose(got, tei_embed(embedder, TEXTS[0]), atol=ATOL)
    client = InferenceClient(base_url=embedder.url)
    np.testing.assert_allclose(client.feature_extraction(TEXTS), tei_embed(embedder, TEXTS),
                               atol=ATOL)
    got = client.feature_extraction(TEXTS[:2], normalize=False, prompt_name="query",
                                    truncate=True, truncation_direction="left", dimensions=32)
    want = tei_embed(embedder, TEXTS[:2], normalize=False, prompt_name="query", truncate=True,
                     truncation_direction="left", dimensions=32)
    np.testing.assert_allclose(got, want, atol=ATOL)


def test_hf_sentence_similarity_is_tei_similarity(embedder):
    client = InferenceClient(base_url=embedder.url)
    got = client.sentence_similarity(TEXTS[0], other_sentences=TEXTS[1:])
    want = embedder.post("/similarity", {"inputs": {"source_sentence": TEXTS[0],
                                                    "sentences": TEXTS[1:]}})
    assert len(got) == len(TEXTS) - 1
    np.testing.assert_allclose(got, want, atol=ATOL)


def test_hf_text_classification_is_tei_predict(classifier):
    client = InferenceClient(base_url=classifier.url)
    text = "A man is playing a guitar."
    got = client.text_classification(text)
    want = classifier.post("/predict", {"inputs": text})
    assert [x.label for x in got] == [x["label"] for x in want]
    assert sorted(x.label for x in got) == ["contradiction", "entailment", "neutral"]
    np.testing.assert_allclose([x.score for x in got], [x["score"] for x in want], atol=ATOL)
    assert [x.label for x in client.text_classification(text, top_k=2)] == [
        x["label"] for x in want[:2]]
    # function_to_apply: none is /predict's raw_scores; sigmoid applies to each logit.
    raw = {x["label"]: x["score"]
           for x in classifier.post("/predict", {"inputs": text, "raw_scores": True})}
    for function, f in (("none", lambda v: v), ("sigmoid", lambda v: 1 / (1 + np.exp(-v)))):
        got = {x.label: x.score for x in client.text_classification(
            text, function_to_apply=function)}
        np.testing.assert_allclose([got[k] for k in raw], [f(v) for v in raw.values()],
                                   atol=ATOL, err_msg=function)


def test_hf_text_classification_on_a_reranker_is_its_one_label(reranker):
    got = InferenceClient(base_url=reranker.url).text_classification("what is a cat")
    want = reranker.post("/predict", {"inputs": "what is a cat"})
    assert [x.label for x in got] == ["LABEL_0"] == [x["label"] for x in want]
    np.testing.assert_allclose(got[0].score, want[0]["score"], atol=ATOL)
