"""What deploy/ ships: the Kubernetes manifests are valid objects (kubernetes-validate, strict,
against Kubernetes 1.32's schemas), and the orchid command lines in them and in the Dockerfile's
CMD are ones orchid runs: the worker and gateway start from the manifests' own arguments (only
addresses and the model path swapped for local ones; the headless Service's name for
`localhost`), the gateway finds the worker through --backend-dns, the probes' paths answer, and
the embeddings are the reference's. (Building the image itself needs a container runtime, which
this test does not assume.)"""
import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import requests
import yaml

from support import (ORCHID_MODEL, REPO, SENTENCES, SHORT, OrchidProcess, assert_close_to_reference,
                     rows, wait_healthy)

DEPLOY = REPO / "deploy"
MANIFESTS = sorted((DEPLOY / "kubernetes").glob("*.yaml"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def objects():
    out = {}
    for path in MANIFESTS:
        for doc in yaml.safe_load_all(path.read_text()):
            out[(doc["kind"], doc["metadata"]["name"])] = doc
    return out


def container(deployment):
    [c] = deployment["spec"]["template"]["spec"]["containers"]
    return c


def test_manifests_are_valid_kubernetes_objects():
    assert MANIFESTS, "deploy/kubernetes has no manifests"
    p = subprocess.run([str(Path(sys.executable).parent / "kubernetes-validate"), "--strict",
                        "--kubernetes-version", "1.32.0", *map(str, MANIFESTS)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count("passed") == 4, p.stdout


def test_the_manifests_command_lines_serve():
    o = objects()
    worker, gateway = o[("Deployment", "orchid-worker")], o[("Deployment", "orchid-gateway")]
    service = o[("Service", "orchid-worker")]
    assert service["spec"]["clusterIP"] == "None"  # headless: --backend-dns sees every pod
    grpc_port = service["spec"]["ports"][0]["port"]
    local = {"/models/all-MiniLM-L6-v2": str(ORCHID_MODEL)}
    g_port, m_port, h_port = free_port(), free_port(), free_port()

    def swap(arg):
        for a, b in local.items():
            arg = arg.replace(a, b)
        arg = arg.replace(f"0.0.0.0:{grpc_port}", f"127.0.0.1:{g_port}")
        arg = arg.replace("0.0.0.0:9090", f"127.0.0.1:{m_port}")
        arg = arg.replace("0.0.0.0:8080", f"127.0.0.1:{h_port}")
        return arg.replace(f"orchid-worker:{grpc_port}", f"localhost:{g_port}")

    w_args = [swap(a) for a in container(worker)["args"]]
    gw_args = [swap(a) for a in container(gateway)["args"]]
    assert f"--backend-dns=localhost:{g_port}" in gw_args, gw_args
    w = OrchidProcess(w_args + ["--threads", "1"], ready=r"orchid worker: .* on grpc ", name="worker")
    g = None
    try:
        probe = container(worker)["readinessProbe"]["httpGet"]["path"]
        assert requests.get(f"http://127.0.0.1:{m_port}{probe}", timeout=10).status_code == 200
        g = OrchidProcess(gw_args, ready=r"orchid gateway for ", name="gateway")
        url = f"http://127.0.0.1:{h_port}"
        wait_healthy(url, g.deadline, g)
        assert container(gateway)["readinessProbe"]["httpGet"]["path"] == "/health"
        texts = [SENTENCES[i] for i in SHORT[:16]]
        r = requests.post(url + "/v1/embeddings", json={"input": texts}, timeout=60)
        assert r.status_code == 200, r.text
        assert_close_to_reference(rows(r.json()), SHORT[:16], "through the manifests' gateway")
    finally:
        if g is not None:
            assert g.stop() == 0, g.log_text()
        assert w.stop() == 0, w.log_text()


def test_the_images_default_command_serves():
    text = (DEPLOY / "Dockerfile").read_text()
    [cmd] = re.findall(r"^CMD (\[.*\])$", text, re.M)
    [entry] = re.findall(r"^ENTRYPOINT (\[.*\])$", text, re.M)
    args = json.loads(entry)[1:] + json.loads(cmd)
    assert args[0] == "serve" and "/models/all-MiniLM-L6-v2" in args
    assert "fetch-model.sh" in text and "ORCHID_NATIVE=OFF" in text
    args = [str(ORCHID_MODEL) if a == "/models/all-MiniLM-L6-v2" else a for a in args]
    args = ["127.0.0.1" if a == "0.0.0.0" else "0" if a == "8080" else a for a in args]
    s = OrchidProcess(args, ready=r" on http://(\S+):(\d+)\s*$", name="serve")
    try:
        url = f"http://127.0.0.1:{s.ready.group(2)}"
        wait_healthy(url, s.deadline, s)
        r = requests.post(url + "/v1/embeddings", json={"input": SENTENCES[SHORT[0]]}, timeout=60)
        assert r.status_code == 200, r.text
        assert_close_to_reference(rows(r.json()), SHORT[:1], "the image's default command")
    finally:
        assert s.stop() == 0, s.log_text()
