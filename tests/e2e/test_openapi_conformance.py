"""The served /openapi.json against the server itself (issue 23), with schemathesis
(`st run --checks all`): requests the document says are valid must be taken, invalid ones
refused with a 4xx, and every status code, content type and body the server answers must be
documented. Against `orchid serve` with an embedding model (all-MiniLM-L6-v2, and the same with
named prompts), a cross-encoder reranker, a classifier, a SPLADE model, a jina-embeddings-v3
model, a BGE-M3 model and a ColBERT (models/fixtures), and against `orchid gateway` in front of
a worker.

Each server hands out the document narrowed to what its model answers (openapi_document.h), so
an embedder's document has no rerank routes and its `model` and `prompt_name` enums are its own.
Generation is deterministic (the same cases every run) and bounded (EXAMPLES cases per operation
and phase, a minute or so per server on two cores); tests/e2e/schemathesis.toml lists the two
documented statuses the default checks do not expect.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import (ORCHID_MODEL, REPO, OrchidProcess, OrchidServer, model_with_prompts,
                     wait_healthy)

FIXTURES = REPO / "models" / "fixtures"
CONFIG = Path(__file__).with_name("schemathesis.toml")
EXAMPLES = int(os.environ.get("ORCHID_SCHEMATHESIS_EXAMPLES", "30"))


def schemathesis_cli():
    st = Path(sys.executable).with_name("st")
    return str(st) if st.exists() else shutil.which("st")


def run_schemathesis(url, tmp_path):
    """`st run` against url's /openapi.json; fails the test with schemathesis' report."""
    st = schemathesis_cli()
    assert st, "schemathesis is not installed (scripts/requirements-test.txt)"
    cmd = [st, "--config-file", str(CONFIG), "--no-color", "run", f"{url}/openapi.json",
           "--checks", "all", "--max-examples", str(EXAMPLES), "--generation-deterministic",
           "--workers", "1", "--request-timeout", "60",
           "--max-failures", "20"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"schemathesis found disagreements ({' '.join(cmd)}):\n{out}"
    # A run that tested nothing would pass too: make sure every operation was exercised.
    assert "Tested:" in out and " 0 generated" not in out, out


def fixture_dir(name):
    d = FIXTURES / name
    if not (d / "config.json").exists():
        pytest.skip(f"{d} is missing (run `make fixtures`)")
    return d


def prompted(tmp_path):
    """all-MiniLM-L6-v2 (symlinked) with named prompts: prompt_name's enum is not empty."""
    return model_with_prompts(tmp_path / "minilm-prompts", {"query": "query: ", "document": "passage: "})


@pytest.mark.parametrize("model", ["embedder", "embedder-with-prompts", "bert-cross-encoder",
                                   "bert-classifier", "splade-bert", "jina-v3", "bge-m3",
                                   "colbert-bert"])
def test_serve_conforms_to_its_openapi_document(model, tmp_path):
    d = {"embedder": lambda: ORCHID_MODEL, "embedder-with-prompts": lambda: prompted(tmp_path)}.get(
        model, lambda: fixture_dir(model))()
    server = OrchidServer(model=d)
    try:
        run_schemathesis(server.url, tmp_path)
    finally:
        assert server.stop() == 0, server.log_text()


def test_chunking_reranker_conforms_to_its_openapi_document(tmp_path):
    """A cross-encoder with a 24-token window served with --max-chunks-per-doc: the rerank
    routes' chunk fields against a server that chunks. (Generated documents are mostly short:
    test_chunked_rerank.py checks replies with `chunk` against the document.)"""
    d = REPO / "models" / "conformance" / "st6.3-tf5.25" / "distilbert-ce-sigmoid"
    if not (d / "config.json").exists():
        pytest.skip(f"{d} is missing (run `make fixtures`)")
    server = OrchidServer("--max-chunks-per-doc", "4", model=d)
    try:
        run_schemathesis(server.url, tmp_path)
    finally:
        assert server.stop() == 0, server.log_text()


def test_gateway_conforms_to_its_openapi_document(tmp_path):
    # Port 0: the worker picks a free port and logs it (no race with other processes).
    worker = OrchidProcess(
        ["worker", "--model", str(ORCHID_MODEL), "--listen", "127.0.0.1:0", "--threads", "1"],
        ready=r"orchid worker: .* on grpc \S+ \(port (\d+)\)", name="worker")
    gateway = None
    try:
        gateway = OrchidProcess(
            ["gateway", "--listen", "127.0.0.1:0", "--model", str(ORCHID_MODEL), "--backend",
             f"127.0.0.1:{worker.ready.group(1)}", "--health-interval", "0.2"],
            ready=r"orchid gateway for .* \(port (\d+)\)", name="gateway")
        url = f"http://127.0.0.1:{gateway.ready.group(1)}"
        wait_healthy(url, gateway.deadline, gateway)
        run_schemathesis(url, tmp_path)
    finally:
        if gateway is not None:
            assert gateway.stop() == 0, gateway.log_text()
        worker.stop()
