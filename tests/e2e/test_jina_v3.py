"""jina-embeddings-v3's task adapters chosen per request (issue 32 item 3), end to end: a
random-weight model in jinaai/jina-embeddings-v3-hf's layout (tests/fixtures/jina_v3/build.py,
numpy only, built here) against what transformers + PEFT computed for it
(tests/fixtures/jina_v3/reference, made by make_reference.py there), per task and with no task:

- `task` (Jina's API names, or the adapter folder's) on /v1/embeddings and TEI's /embed;
  `input_type` (OpenAI-style query / document, Cohere's search_query / search_document /
  classification / clustering) and `prompt_name` naming a task pick the adapter too, with the
  task's prompt put before the text;
- requests of every task at once (so that batches mix tasks) give each the rows it gets alone;
- Matryoshka `dimensions`: the first N of the reference, re-normalised; widths the model's
  config does not list are refused (as vLLM refuses them);
- a task the model has no adapter for is a clear 400 naming the tasks it has, and the server
  keeps serving;
- the same through a gateway in front of a worker (the task travels in the worker protocol), and
  `orchid embed --task`."""
import importlib.util
import json
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import requests

from support import ORCHID_BIN, ORCHID_MODEL, REPO, OrchidProcess, OrchidServer, free_port, wait_healthy

HERE = REPO / "tests" / "fixtures" / "jina_v3"
REF = json.loads((HERE / "reference" / "jina-v3.json").read_text(encoding="utf-8"))
TEXTS = REF["texts"]
TASKS = REF["tasks"]
FOLDERS = {"retrieval.query": "retrieval_query", "retrieval.passage": "retrieval_passage",
           "separation": "separation", "classification": "classification",
           "text-matching": "text_matching"}


def expected(task):
    rows = sorted((c for c in REF["cases"] if c["task"] == task), key=lambda c: c["text"])
    return np.array([c["expected"] for c in rows])


def _build_module():
    spec = importlib.util.spec_from_file_location("jina_build", HERE / "build.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("jina")
    _build_module().build(root)
    return root / "jina-v3"


@pytest.fixture(scope="module")
def server(model_dir):
    s = OrchidServer("--model", f"mini={ORCHID_MODEL}", model=f"jina={model_dir}")
    yield s
    assert s.stop() == 0, s.log_text()


def assert_rows(got, want, what):
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    cos = (got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
    assert cos.min() >= 0.99999, (what, int(cos.argmin()), float(cos.min()))
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-5, err_msg=what)


def openai(url, texts=TEXTS, **extra):
    r = requests.post(url + "/v1/embeddings", json={"model": "jina", "input": texts, **extra}, timeout=120)
    assert r.status_code == 200, r.text
    return [d["embedding"] for d in r.json()["data"]]


def test_every_task_matches_transformers_and_peft(server):
    assert_rows(openai(server.url), expected(None), "no task: the base model")
    for task in TASKS:
        assert_rows(openai(server.url, task=task), expected(task), task)
        assert_rows(openai(server.url, task=FOLDERS[task]), expected(task), FOLDERS[task])
    # The adapters matter: a task's rows are not the base model's.
    a, b = expected(None), expected("retrieval.query")
    assert ((a * b).sum(1) < 0.999).all()


def test_every_route_and_field_that_picks_a_task(server):
    url = server.url
    # prompt_name naming a task (sentence-transformers' encode(task=T, prompt_name=T)).
    assert_rows(openai(url, prompt_name="retrieval.query"), expected("retrieval.query"), "prompt_name")
    # OpenAI-style input_type.
    assert_rows(openai(url, input_type="query"), expected("retrieval.query"), "input_type query")
    assert_rows(openai(url, input_type="document"), expected("retrieval.passage"), "input_type document")
    # TEI's /embed (the first served model) with task.
    r = requests.post(url + "/embed", json={"inputs": TEXTS, "task": "text-matching"}, timeout=120)
    assert r.status_code == 200, r.text
    assert_rows(r.json(), expected("text-matching"), "/embed task")
    # Cohere's input types.
    for input_type, task in (("search_query", "retrieval.query"), ("search_document", "retrieval.passage"),
                             ("classification", "classification"), ("clustering", "separation")):
        r = requests.post(url + "/v2/embed", json={"model": "jina", "texts": TEXTS, "input_type": input_type,
                                                   "embedding_types": ["float"]}, timeout=120)
        assert r.status_code == 200, r.text
        assert_rows(r.json()["embeddings"]["float"], expected(task), f"cohere {input_type}")
    # An explicit task wins over input_type.
    assert_rows(openai(url, input_type="query", task="separation"), expected("separation"), "task over input_type")


def test_tasks_mixed_in_batches_give_each_request_its_own_rows(server):
    jobs = [(task, i) for _ in range(3) for task in [None, *TASKS] for i in range(len(TEXTS))]
    want = {task: expected(task) for task in [None, *TASKS]}

    def one(job):
        task, i = job
        extra = {} if task is None else {"task": task}
        return job, openai(server.url, texts=[TEXTS[i]], **extra)[0]

    with ThreadPoolExecutor(12) as pool:
        for (task, i), row in pool.map(one, jobs):
            assert_rows([row], want[task][i:i + 1], f"{task} text {i} beside other tasks")


def test_matryoshka_dimensions(server):
    for dims in REF.get("matryoshka_dimensions", [8, 16, 24, 32, 48]):
        got = openai(server.url, task="retrieval.passage", dimensions=dims)
        want = expected("retrieval.passage")[:, :dims]
        assert_rows(got, want / np.linalg.norm(want, axis=1, keepdims=True), f"dimensions {dims}")
    r = requests.post(server.url + "/v1/embeddings",
                      json={"model": "jina", "input": TEXTS[:1], "dimensions": 20}, timeout=60)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == "dimensions"
    assert "8, 16, 24, 32, 48" in r.json()["error"]["message"]


def test_a_task_without_an_adapter_is_a_clear_400(server):
    url = server.url
    r = requests.post(url + "/v1/embeddings", json={"model": "jina", "input": "x", "task": "retrieval"},
                      timeout=60)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == "task" and err["code"] == "invalid_task", err
    for task in TASKS:
        assert task in err["message"], err
    r = requests.post(url + "/embed", json={"inputs": "x", "task": "nope"}, timeout=60)
    assert r.status_code == 400, r.text
    assert "retrieval.query" in r.json()["error"], r.json()
    r = requests.post(url + "/v1/embeddings", json={"model": "jina", "input": "x", "task": 3}, timeout=60)
    assert r.status_code == 400, r.text
    # A model without task adapters.
    r = requests.post(url + "/v1/embeddings", json={"model": "mini", "input": "x", "task": "retrieval.query"},
                      timeout=60)
    assert r.status_code == 400, r.text
    assert "no task adapters" in r.json()["error"]["message"]
    # Still serving.
    assert_rows(openai(url, texts=TEXTS[:2], task="classification"), expected("classification")[:2], "after")


def test_models_and_openapi_name_the_tasks(server):
    doc = requests.get(server.url + "/openapi.json", timeout=60).json()
    text = json.dumps(doc)
    assert '"task"' in text
    for task in TASKS:
        assert task in text, task


def test_gateway_and_worker_carry_the_task(model_dir):
    port = free_port()
    worker = OrchidProcess(["worker", "--model", str(model_dir), "--listen", f"127.0.0.1:{port}",
                            "--metrics-listen", f"127.0.0.1:{free_port()}", "--threads", "1"],
                           ready=r"orchid worker: .* on grpc ", name="jina worker")
    try:
        gateway = OrchidProcess(["gateway", "--listen", "127.0.0.1:0", "--model", str(model_dir),
                                 "--health-interval", "0.2", "--backend", f"127.0.0.1:{port}"],
                                ready=r"orchid gateway for .* \(port (\d+)\)", name="jina gateway")
        try:
            url = f"http://127.0.0.1:{gateway.ready.group(1)}"
            wait_healthy(url, gateway.deadline, gateway)
            for task in [None, "retrieval.query", "text-matching"]:
                extra = {} if task is None else {"task": task}
                r = requests.post(url + "/v1/embeddings", json={"input": TEXTS, **extra}, timeout=120)
                assert r.status_code == 200, r.text
                assert_rows([d["embedding"] for d in r.json()["data"]], expected(task), f"gateway {task}")
            r = requests.post(url + "/v1/embeddings", json={"input": "x", "task": "nope"}, timeout=60)
            assert r.status_code == 400 and "retrieval.query" in r.json()["error"]["message"], r.text
        finally:
            assert gateway.stop() == 0, gateway.log_text()
    finally:
        assert worker.stop() == 0, worker.log_text()


def test_embed_command_task(model_dir, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in TEXTS), encoding="utf-8")
    out = tmp_path / "out.npy"
    p = subprocess.run([str(ORCHID_BIN), "embed", "--model", str(model_dir), "--input", str(src),
                        "--output", str(out), "--task", "retrieval.query", "--quiet"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert_rows(np.load(out), expected("retrieval.query"), "orchid embed --task")
    p = subprocess.run([str(ORCHID_BIN), "embed", "--model", str(model_dir), "--input", str(src),
                        "--output", str(tmp_path / "bad.npy"), "--task", "nope", "--quiet"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode != 0 and "retrieval.query" in p.stdout + p.stderr, p.stdout + p.stderr
