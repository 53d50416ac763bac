"""`--dtype int8` (issue 31) end to end, against the reference: the default model and the real
all-mpnet-base-v2 served in int8 must stay within the fidelity the server promises (mean cosine
>= 0.999, min >= 0.995 against sentence-transformers' fp32 embeddings of the committed reference
sentences, tests/fixtures/stsb and tests/fixtures/real_models), report that they are int8 and
what their start-up check measured, and refuse to start when that check is below the thresholds
unless told to serve anyway."""
import json
import re
import subprocess

import numpy as np
import pytest
import requests

from support import (EMBEDDINGS, ORCHID_BIN, ORCHID_MODEL, REPO, SENTENCES, OrchidServer, cosines,
                     rows)

REAL = REPO / "tests" / "fixtures" / "real_models"
FIDELITY = re.compile(r"--dtype int8 against float32 on (\d+) built-in texts: mean cosine "
                      r"([0-9.]+), minimum ([0-9.]+)")


def embed(url, texts):
    """Truncated to the model's limit, as sentence-transformers encodes (the long reference
    sentence included)."""
    out = []
    for start in range(0, len(texts), 64):
        r = requests.post(url + "/v1/embeddings", json={"input": texts[start:start + 64], "truncate": True},
                          timeout=300)
        assert r.status_code == 200, r.text
        out.append(rows(r.json()))
    return np.concatenate(out)


def check_reported_fidelity(server):
    """/info and /v1/models say int8 and carry the start-up check's numbers, as logged; returns
    them, and whether they pass the default gate."""
    logged = None
    for line in server.log:
        m = FIDELITY.search(line)
        if m:
            logged = (int(m.group(1)), float(m.group(2)), float(m.group(3)))
    assert logged is not None, server.log_text()
    info = requests.get(server.url + "/info", timeout=30).json()
    assert info["model_dtype"] == "int8", info
    f = info["fidelity"]
    assert f["reference"] == "float32", f
    assert f["samples"] == logged[0], (f, logged)
    assert abs(f["mean_cosine"] - logged[1]) < 2e-6 and abs(f["min_cosine"] - logged[2]) < 2e-6
    assert f["min_cosine"] <= f["mean_cosine"] <= 1, f
    model = requests.get(server.url + "/v1/models", timeout=30).json()["data"][0]
    assert model["dtype"] == "int8" and model["fidelity"] == f, model
    passes = f["mean_cosine"] >= 0.999 and f["min_cosine"] >= 0.995
    assert passes or "served because of --int8-serve-anyway" in "\n".join(server.log), f
    return f, passes


@pytest.mark.parametrize("name", ["all-MiniLM-L6-v2", "all-mpnet-base-v2"])
def test_int8_embeddings_are_within_the_promised_fidelity(name, report):
    if name == "all-MiniLM-L6-v2":
        model, sentences, want = ORCHID_MODEL, SENTENCES, EMBEDDINGS
    else:
        model = REPO / "models" / name
        assert (model / ".complete").exists(), f"{model} is missing: run scripts/fetch-real-models.sh"
        sentences = json.loads((REAL / name / "sentences.json").read_text(encoding="utf-8"))
        want = np.load(REAL / name / "embeddings.npy")
    # Served anyway, so that a CPU whose check falls short (7-bit activations without VNNI:
    # all-mpnet-base-v2 measured 0.99863 under ONEDNN_MAX_CPU_ISA=AVX2) still shows its numbers.
    server = OrchidServer("--dtype", "int8", "--int8-serve-anyway", model=model,
                          startup_timeout=300)
    try:
        f, passes = check_reported_fidelity(server)
        isa = next((line for line in server.log if "oneDNN's" in line), "")
        got = embed(server.url, sentences)
    finally:
        assert server.stop() == 0, server.log_text()
    assert got.shape == want.shape
    cos = cosines(got, want)
    report.append((f"{name} --dtype int8 vs sentence-transformers fp32 ({len(sentences)} texts)",
                   f"mean cosine {cos.mean():.6f}, min {cos.min():.6f}; start-up check "
                   f"{f['mean_cosine']:.6f} / {f['min_cosine']:.6f}"))
    # With 8-bit activations (VNNI, AMX) the check must pass; without, it may not (the gate
    # then refuses by default: test_int8_refuses_to_start_below_the_thresholds_unless_told).
    if "vnni" in isa or "bf16" in isa or "amx" in isa:
        assert passes, (name, f, isa)
    if not passes:
        assert cos.min() >= 0.98, (name, cos.min())
        pytest.skip(f"{name}: the start-up check measured {f} on this CPU ({isa}): below the "
                    "default gate, which refuses it; the promised fidelity does not apply")
    assert cos.mean() >= 0.999, (name, cos.mean())
    assert cos.min() >= 0.995, (name, cos.min(), sentences[int(cos.argmin())])


def test_int8_refuses_to_start_below_the_thresholds_unless_told():
    # No model's int8 reaches a minimum cosine of 1 on every text: the gate must refuse.
    args = [str(ORCHID_BIN), "serve", "--model", str(ORCHID_MODEL), "--host", "127.0.0.1",
            "--port", "0", "--dtype", "int8", "--int8-min-cosine", "1"]
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert p.returncode != 0, p.stdout + p.stderr
    out = p.stdout + p.stderr
    m = re.search(r"against float32 on (\d+) built-in texts, mean cosine ([0-9.]+) \(required "
                  r"0\.999000\) and minimum ([0-9.]+) \(required 1\.000000\)", out)
    assert m, out
    assert "--int8-serve-anyway" in out, out
    # Told to serve anyway, it serves and says what it measured.
    server = OrchidServer("--dtype", "int8", "--int8-min-cosine", "1", "--int8-serve-anyway")
    try:
        assert "served because of --int8-serve-anyway" in "\n".join(server.log), server.log_text()
        info = requests.get(server.url + "/info", timeout=30).json()
        assert info["fidelity"]["samples"] == int(m.group(1)), info
        assert abs(info["fidelity"]["min_cosine"] - float(m.group(3))) < 2e-6, (info, m.group(0))
        r = requests.post(server.url + "/v1/embeddings", json={"input": "hello"}, timeout=60)
        assert r.status_code == 200, r.text
    finally:
        assert server.stop() == 0, server.log_text()


def test_float32_reports_its_dtype_and_no_fidelity(server):
    info = requests.get(server.url + "/info", timeout=30).json()
    assert info["model_dtype"] == "float32" and info["fidelity"] is None, info


def test_a_gateway_reports_its_int8_workers_fidelity():
    """The worker's dtype and start-up check reach the gateway's /info and /v1/models (proto
    InfoResponse fields 24-27)."""
    from support import Gateway, Worker

    worker = Worker(None, None, "--dtype", "int8", "--int8-serve-anyway")
    gateway = None
    try:
        logged = next(FIDELITY.search(line) for line in worker.proc.log if FIDELITY.search(line))
        gateway = Gateway([worker])
        info = requests.get(gateway.url + "/info", timeout=30).json()
        assert info["model_dtype"] == "int8", info
        f = info["fidelity"]
        assert f["samples"] == int(logged.group(1)), (f, logged.group(0))
        assert abs(f["mean_cosine"] - float(logged.group(2))) < 2e-6, (f, logged.group(0))
        assert abs(f["min_cosine"] - float(logged.group(3))) < 2e-6, (f, logged.group(0))
        model = requests.get(gateway.url + "/v1/models", timeout=30).json()["data"][0]
        assert model["dtype"] == "int8" and model["fidelity"] == f, model
    finally:
        if gateway is not None:
            gateway.proc.stop()
        worker.proc.stop()
