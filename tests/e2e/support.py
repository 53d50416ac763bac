"""Helpers for the end-to-end tests: paths, a real `orchid serve` process, and the committed
sentence-transformers references (tests/fixtures/stsb, made by make_reference.py there).

Env: ORCHID_BIN (default build/orchid), ORCHID_MODEL (default models/all-MiniLM-L6-v2).
Relative paths are taken from the current directory (the repo root under `make e2e-test`).
"""
import base64
import json
import os
import queue
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import requests

REPO = Path(__file__).resolve().parents[2]
TEST_DATA = REPO / "tests" / "data"  # STS-B and the rest: tests/data/README.md
STSB_FIXTURES = REPO / "tests" / "fixtures" / "stsb"


def _env_path(name, default):
    p = Path(os.environ.get(name, str(default)))
    return p if p.is_absolute() else Path.cwd() / p


ORCHID_BIN = _env_path("ORCHID_BIN", REPO / "build" / "orchid")
ORCHID_MODEL = _env_path("ORCHID_MODEL", REPO / "models" / "all-MiniLM-L6-v2")
MODEL_NAME = Path(os.path.abspath(ORCHID_MODEL)).name  # the server's default served name


class OrchidProcess:
    """An `orchid` subcommand as a child process, its output collected; ready once a line of
    its log matches `ready` (the match is kept in self.ready)."""

    def __init__(self, args, ready, startup_timeout=120, name=None, wrap=(), env=None):
        """`wrap`: a command the orchid command line is appended to (e.g. `ip netns exec NS`);
        it must exec orchid in place, so that signals reach orchid itself. `env`: variables
        added to this process's environment for the child."""
        if not ORCHID_BIN.exists():
            pytest.fail(f"ORCHID_BIN {ORCHID_BIN} does not exist (run `make build`)")
        if not (ORCHID_MODEL / "config.json").exists():
            pytest.fail(f"ORCHID_MODEL {ORCHID_MODEL} is not a model directory (run `make model`)")
        self.name = name or args[0]
        self.args = [*wrap, str(ORCHID_BIN), *args]
        self.log = []
        self._lines = queue.Queue()
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, encoding="utf-8", errors="replace",
                                     env={**os.environ, **env} if env else None)
        threading.Thread(target=self._pump, daemon=True).start()
        self.deadline = time.monotonic() + startup_timeout
        self.ready = self._wait_line(re.compile(ready), startup_timeout)

    def _pump(self):
        for line in self.proc.stdout:
            self.log.append(line.rstrip("\n"))
            self._lines.put(line)
        self._lines.put(None)

    def _wait_line(self, pattern, timeout):
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, self.deadline - time.monotonic()))
            except queue.Empty:
                self.kill()
                pytest.fail(f"orchid {self.name} did not start in {timeout}s:\n" + self.log_text())
            if line is None:
                self.proc.wait()
                pytest.fail(f"orchid {self.name} exited with {self.proc.returncode}:\n"
                            + self.log_text())
            m = pattern.search(line)
            if m:
                return m

    def log_text(self):
        return "\n".join(self.log[-50:])

    def stop(self, timeout=60):
        """SIGTERM, then wait; returns the exit code (None if it had to be killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                return None
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def wait_healthy(url, deadline, proc):
    """Polls url + /health until it answers 200; fails (killing proc) at the deadline."""
    while time.monotonic() < deadline:
        try:
            if requests.get(f"{url}/health", timeout=5).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.05)
    proc.kill()
    pytest.fail(f"orchid {proc.name} never answered /health:\n" + proc.log_text())


class OrchidServer(OrchidProcess):
    """`orchid serve` on a free port (--port 0; the port is read from its startup log line)."""

    def __init__(self, *extra_args, startup_timeout=120, model=None, env=None):
        super().__init__(["serve", "--model", str(model or ORCHID_MODEL), "--host", "127.0.0.1",
                          "--port", "0", *extra_args],
                         ready=r" on http://(\S+):(\d+)\s*$", startup_timeout=startup_timeout,
                         env=env)
        self.port = int(self.ready.group(2))
        self.url = f"http://127.0.0.1:{self.port}"
        wait_healthy(self.url, self.deadline, self)


def _url(server):
    return server if isinstance(server, str) else server.url


def post(server, path, body, timeout=120):
    """POSTs `body` as JSON to a running server (an OrchidServer or Gateway, or a base URL);
    the response, whatever its status."""
    return requests.post(_url(server) + path, json=body, timeout=timeout)


def post_ok(server, path, body, status=200, timeout=60):
    """post(), failing unless the response has `status`; the response."""
    r = post(server, path, body, timeout=timeout)
    assert r.status_code == status, (path, r.status_code, r.text)
    return r


def post_json(server, path, body, status=200, timeout=60):
    """post_ok()'s response body, parsed."""
    return post_ok(server, path, body, status, timeout).json()


def model_with_prompts(dest, prompts, model=None):
    """A model directory at `dest`: `model`'s files (ORCHID_MODEL's by default) symlinked, with
    config_sentence_transformers.json naming `prompts` (no default prompt)."""
    dest.mkdir()
    for item in (model or ORCHID_MODEL).iterdir():
        if item.name != "config_sentence_transformers.json":
            (dest / item.name).symlink_to(item.resolve())
    (dest / "config_sentence_transformers.json").write_text(
        json.dumps({"prompts": prompts, "default_prompt_name": None}))
    return dest


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Split serving: `orchid worker` processes and an `orchid gateway` in front of them.
class Worker:
    def __init__(self, port=None, metrics_port=None, *extra, host="127.0.0.1", wrap=(),
                 model=None):
        self.port = port or free_port()
        self.metrics_port = metrics_port or free_port()
        self.extra = extra
        self.host = host
        self.wrap = wrap
        self.model = model or ORCHID_MODEL
        self.start()

    def start(self):
        self.proc = OrchidProcess(
            ["worker", "--model", str(self.model), "--listen", self.address,
             "--metrics-listen", f"{self.host}:{self.metrics_port}", "--threads", "1",
             *self.extra],
            ready=r"orchid worker: .* on grpc ", name=f"worker:{self.address}", wrap=self.wrap)

    @property
    def address(self):
        return f"{self.host}:{self.port}"

    def metrics(self):
        return requests.get(f"http://{self.host}:{self.metrics_port}/metrics", timeout=10).text


class Gateway:
    def __init__(self, workers, *extra, model=None):
        backends = []
        for w in workers:
            backends += ["--backend", w.address]
        self.proc = OrchidProcess(
            ["gateway", "--listen", "127.0.0.1:0", "--model", str(model or ORCHID_MODEL),
             "--health-interval", "0.2", *backends, *extra],
            ready=r"orchid gateway for .* \(port (\d+)\)", name="gateway")
        self.url = f"http://127.0.0.1:{self.proc.ready.group(1)}"
        wait_healthy(self.url, self.proc.deadline, self.proc)

    def metrics(self):
        return requests.get(f"{self.url}/metrics", timeout=10).text


def metric(text, name, **labels):
    """The value of one sample in a Prometheus text exposition (0 when absent)."""
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    pattern = re.escape(name) + (r"\{" + re.escape(want) + r"\}" if want else "") + r" (\S+)$"
    for line in text.splitlines():
        m = re.match(pattern, line)
        if m:
            return float(m.group(1))
    return 0.0


# The committed sentence-transformers references.
with open(STSB_FIXTURES / "reference_sentences.json", encoding="utf-8") as _f:
    _REF = json.load(_f)

SENTENCES = _REF["sentences"]
MAX_SEQ_LENGTH = _REF["max_seq_length"]
LONG_INDEX = _REF["long_text_index"]
EMBEDDINGS = np.load(STSB_FIXTURES / "reference_embeddings.npy")
# Everything but the over-long text (which the server only takes with truncate: true).
SHORT = [i for i in range(len(SENTENCES)) if i != LONG_INDEX]

MIN_COSINE = 0.99999


def cosines(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def assert_rows_close(got, expected, min_cosine=MIN_COSINE):
    """Rows of the same shape, each at cosine >= min_cosine to its expected row."""
    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    assert got.shape == expected.shape
    cos = cosines(got, expected)
    assert cos.min() >= min_cosine, cos.min()


def assert_close_to_reference(got, indices, what=""):
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == (len(indices), EMBEDDINGS.shape[1]), (what, got.shape)
    cos = cosines(got, EMBEDDINGS[indices])
    worst = int(np.argmin(cos))
    assert cos[worst] >= MIN_COSINE, (
        f"{what}: cosine {cos[worst]:.7f} < {MIN_COSINE} for {SENTENCES[indices[worst]]!r}")


def decode_base64(s):
    return np.frombuffer(base64.b64decode(s), dtype="<f4")


def rows(reply_json):
    """Embeddings of an OpenAI reply, float or base64, as float32 [n, dim], checking the shape."""
    assert reply_json["object"] == "list"
    out = []
    for i, item in enumerate(reply_json["data"]):
        assert item["object"] == "embedding" and item["index"] == i, item.keys()
        e = item["embedding"]
        out.append(decode_base64(e) if isinstance(e, str) else np.asarray(e, dtype=np.float32))
    return np.stack(out)


def hf_tokenizer():
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.fspath(ORCHID_MODEL / "tokenizer.json"))
    tok.no_truncation()  # tokenizer.json asks for 128; the server's limit is max_seq_length
    tok.no_padding()
    return tok
