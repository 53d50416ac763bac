"""Bad input gets the documented status and an OpenAI-shaped error body, and the server keeps
serving: after every bad request a good one must succeed."""
import concurrent.futures
import json
import socket

import openai
import pytest
import requests

from support import LONG_INDEX, SENTENCES, OrchidServer, hf_tokenizer

GOOD = {"input": ["still serving"]}


def check_error(r, status, param=None):
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["Content-Type"] == "application/json"
    body = r.json()
    assert set(body) == {"error"}, body
    err = body["error"]
    assert set(err) == {"message", "type", "param", "code"}, err
    assert isinstance(err["message"], str) and err["message"]
    assert isinstance(err["type"], str) and err["type"]
    assert err["param"] is None or isinstance(err["param"], str)
    assert err["code"] is None or isinstance(err["code"], str)
    if param is not None:
        assert err["param"] == param, err
    return err


def check_still_serving(server):
    r = requests.post(server.url + "/v1/embeddings", json=GOOD, timeout=60)
    assert r.status_code == 200, r.text
    assert len(r.json()["data"]) == 1


def _long_ids():
    return hf_tokenizer().encode(SENTENCES[LONG_INDEX]).ids


# (name, raw body bytes or a JSON-able object, status, param)
CASES = [
    ("malformed json", b'{"input": ', 400, None),
    ("not json at all", b"hello", 400, None),
    ("empty body", b"", 400, None),
    ("body is an array", b'["a"]', 400, None),
    ("missing input", {"model": None}, 400, "input"),
    ("null input", {"input": None}, 400, "input"),
    ("input is a number", {"input": 5}, 400, "input"),
    ("input is an object", {"input": {"text": "a"}}, 400, "input"),
    ("input is a bool", {"input": True}, 400, "input"),
    ("mixed strings and ids", {"input": ["a", 5]}, 400, "input[1]"),
    ("mixed ids and strings", {"input": [101, "a"]}, 400, "input[1]"),
    ("float token id", {"input": [101, 2.5, 102]}, 400, "input[1]"),
    ("string inside id lists", {"input": [[101, 102], ["a"]]}, 400, "input[1][0]"),
    ("empty input list", {"input": []}, 400, "input"),
    ("empty string", {"input": ""}, 400, "input"),
    ("empty string in list", {"input": ["a", ""]}, 400, "input[1]"),
    ("empty id list", {"input": [[101, 102], []]}, 400, "input[1]"),
    ("token id out of vocabulary", {"input": [[101, 30522, 102]]}, 400, "input[0][1]"),
    ("negative token id", {"input": [101, -1, 102]}, 400, "input[1]"),
    ("huge token id", {"input": [101, 2**40, 102]}, 400, "input[1]"),
    ("text too long", {"input": ["ok", SENTENCES[LONG_INDEX]]}, 400, "input[1]"),
    ("token ids too long", "LONG_IDS", 400, "input[0]"),
    ("invalid utf-8", b'{"input": "caf\xc3 \xff\xfe"}', 400, None),
    ("lone surrogate escape", b'{"input": "\\ud800"}', 400, None),
    ("model is a number", {"input": "a", "model": 3}, 400, "model"),
    ("unknown encoding_format", {"input": "a", "encoding_format": "int4"}, 400, "encoding_format"),
    ("dimensions zero", {"input": "a", "dimensions": 0}, 400, "dimensions"),
    ("dimensions above the model's", {"input": "a", "dimensions": 385}, 400, "dimensions"),
    ("dimensions not an integer", {"input": "a", "dimensions": "8"}, 400, "dimensions"),
    ("truncate not a bool", {"input": "a", "truncate": "yes"}, 400, "truncate"),
    ("unknown model", {"input": "a", "model": "text-embedding-3-small"}, 404, "model"),
]


@pytest.mark.parametrize("name,body,status,param", CASES, ids=[c[0] for c in CASES])
def test_bad_request_then_good_request(server, name, body, status, param):
    if body == "LONG_IDS":
        body = {"input": [_long_ids()]}
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    r = requests.post(server.url + "/v1/embeddings", data=data,
                      headers={"Content-Type": "application/json"}, timeout=60)
    check_error(r, status, param)
    check_still_serving(server)


@pytest.mark.parametrize("method,path,status", [
    ("GET", "/v1/nothing", 404),
    ("POST", "/v1/chat/completions", 404),
    ("GET", "/index.html", 404),  # GET / is the playground (or TEI's health check)
    ("GET", "/docs/nothing.js", 404),
    ("POST", "/docs", 405),
    ("GET", "/v1/embeddings", 405),
    ("PUT", "/v1/embeddings", 405),
    ("DELETE", "/health", 405),
    ("POST", "/v1/models", 405),
])
def test_unknown_route_and_wrong_method(server, method, path, status):
    r = requests.request(method, server.url + path, timeout=30)
    check_error(r, status)
    if status == 405:
        assert r.headers["Allow"] in ("GET", "POST")
    check_still_serving(server)


def test_body_over_the_limit_gets_413(server):
    big = json.dumps({"input": ["x" * 1000] * (9 * 1024)}).encode()  # ~9 MiB > 8 MiB default
    assert len(big) > 8 * 1024 * 1024
    r = requests.post(server.url + "/v1/embeddings", data=big,
                      headers={"Content-Type": "application/json"}, timeout=60)
    check_error(r, 413)
    check_still_serving(server)


def test_malformed_http_gets_400(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        s.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), head
    assert "error" in json.loads(body)
    check_still_serving(server)


def test_client_disconnecting_mid_request_does_not_hurt(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        s.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"in")
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        body = json.dumps({"input": [SENTENCES[0]] * 50}).encode()
        s.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
                  + body)
        # closes before reading the reply
    check_still_serving(server)


def test_openai_client_raises_the_matching_errors(server, model_name):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.BadRequestError) as e:
        client.embeddings.create(model=model_name, input="")
    assert e.value.status_code == 400
    with pytest.raises(openai.NotFoundError):
        client.embeddings.create(model="no-such-model", input="a")
    with pytest.raises(openai.BadRequestError):
        client.embeddings.create(model=model_name, input="a", dimensions=10_000)
    assert len(client.embeddings.create(model=model_name, input="a").data) == 1


def test_queue_full_gets_429_and_the_rest_succeed():
    # A tiny queue (two long inputs) and a burst of long requests: some must be refused at once.
    s = OrchidServer("--max-batch-tokens", "256", "--max-queued-tokens", "512")
    try:
        long_body = {"input": [SENTENCES[LONG_INDEX]] * 2, "truncate": True}  # 512 tokens
        over = requests.post(s.url + "/v1/embeddings",
                             json={"input": [SENTENCES[LONG_INDEX]] * 3, "truncate": True},
                             timeout=60)
        err = check_error(over, 400)  # larger than the whole queue: retrying would not help
        assert "queue" in err["message"]

        def call(_):
            return requests.post(s.url + "/v1/embeddings", json=long_body, timeout=120)

        with concurrent.futures.ThreadPoolExecutor(32) as pool:
            results = list(pool.map(call, range(32)))
        codes = [r.status_code for r in results]
        assert set(codes) <= {200, 429}, codes
        assert 429 in codes, codes
        assert 200 in codes, codes
        for r in results:
            if r.status_code == 429:
                err = check_error(r, 429)
                assert err["type"] == "rate_limit_error" and err["code"] == "queue_full"
            else:
                assert len(r.json()["data"]) == 2
        r = requests.post(s.url + "/v1/embeddings", json=GOOD, timeout=60)
        assert r.status_code == 200
    finally:
        assert s.stop() == 0, s.log_text()
