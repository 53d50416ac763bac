"""Many clients at once: every request succeeds with the right vectors, in the right order."""
import concurrent.futures
import random
import threading
import time

import requests

from support import SENTENCES, SHORT, OrchidServer, assert_close_to_reference, rows

THREADS = 32
REQUESTS_PER_THREAD = 4


def test_concurrent_clients_get_correct_values(server):
    def client(seed):
        rng = random.Random(seed)
        session = requests.Session()  # keep-alive: several requests per connection
        for _ in range(REQUESTS_PER_THREAD):
            indices = rng.sample(SHORT, rng.randint(1, 12))
            fmt = rng.choice(["float", "base64"])
            r = session.post(server.url + "/v1/embeddings",
                             json={"input": [SENTENCES[i] for i in indices], "encoding_format": fmt},
                             timeout=300)
            assert r.status_code == 200, r.text
            assert_close_to_reference(rows(r.json()), indices, f"thread {seed}, {fmt}")
        return True

    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        assert all(pool.map(client, range(THREADS)))


def _requests_during_sigterm(server, n=8, copies=1):
    """n concurrent requests of `copies` x the reference sentences; SIGTERM while they run.
    Returns (responses, exit code, seconds from SIGTERM to exit)."""
    started = threading.Barrier(n + 1)

    def client(_):
        body = {"input": [SENTENCES[j] for j in SHORT] * copies}
        started.wait()
        return requests.post(server.url + "/v1/embeddings", json=body, timeout=300)

    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        futures = [pool.submit(client, i) for i in range(n)]
        started.wait()
        time.sleep(0.3)  # let the requests reach the server, then stop it while they run
        t0 = time.monotonic()
        rc = server.stop(timeout=120)
        elapsed = time.monotonic() - t0
        # Every request gets an answer: never a dropped connection.
        return [f.result() for f in futures], rc, elapsed


def _check_answer(r):
    if r.status_code == 200:
        got = rows(r.json())
        assert_close_to_reference(got[:len(SHORT)], SHORT, "during shutdown")
    else:
        assert r.status_code == 503, r.text
        err = r.json()["error"]
        assert err["type"] == "server_error" and err["code"] == "unavailable", err


def test_sigterm_finishes_requests_in_progress():
    grace = 60
    s = OrchidServer("--shutdown-grace", str(grace))
    try:
        results, rc, elapsed = _requests_during_sigterm(s)
        assert rc == 0, s.log_text()
        for r in results:
            _check_answer(r)
        if elapsed < grace:  # the grace never ran out, so nothing may have been refused
            assert [r.status_code for r in results] == [200] * len(results)
        assert any("shutting down" in line for line in s.log)
    finally:
        s.kill()


def test_sigterm_without_grace_refuses_what_waits_and_exits():
    # Small batches and much work: at SIGTERM most sequences still wait for a batch.
    s = OrchidServer("--shutdown-grace", "0", "--max-batch-tokens", "512")
    try:
        results, rc, _ = _requests_during_sigterm(s, copies=4)
        assert rc == 0, s.log_text()
        for r in results:
            _check_answer(r)
        assert 503 in [r.status_code for r in results]
    finally:
        s.kill()
