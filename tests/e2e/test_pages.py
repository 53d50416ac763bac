"""The browser pages (issue 23) in a real browser: headless Chromium (Debian's chromium and
chromium-driver, driven by Selenium) against a real `orchid serve`, and `orchid gateway`.

- GET /: the playground. Its similarity heatmap prints the cosines of the API's own embeddings;
  its rerank view ranks as POST /rerank does; its tokens view shows POST /tokenize's tokens over
  the characters they came from; with --api-key it loads without the key, shows the server's
  401 message plainly, and works once the key is typed in.
- GET /docs: Swagger UI (compiled in from the PyPI package pinned in scripts/swagger-ui.txt)
  renders every operation of /openapi.json.
- TEI's POST /: the default model's route (embed for an embedder; predict, or rerank for a
  `query` body, for a reranker).

Screenshots of each view go to test-artifacts/pages/ (ORCHID_TEST_ARTIFACTS overrides); the
folder is printed in the summary.
"""
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import requests

from support import ORCHID_MODEL, REPO, Gateway, OrchidServer, Worker

FIXTURES = REPO / "models" / "fixtures"
CROSS_ENCODER = FIXTURES / "bert-cross-encoder"
JINA = FIXTURES / "jina-v3"  # task adapters (tests/fixtures/jina_v3/build.py)
ARTIFACTS = Path(os.environ.get("ORCHID_TEST_ARTIFACTS", REPO / "test-artifacts")) / "pages"
API_KEY = "playground-test-key"
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
WAIT = 60  # seconds for a view to answer (the first request may wait for a batch)

SENTENCES = [
    "A man is playing a guitar.",
    "Someone plays an instrument on stage.",
    "The cat sleeps on the sofa.",
    "Un chat dort sur le canapé.",
    "Stock markets fell sharply today.",
]


def _need_cross_encoder():
    if not (CROSS_ENCODER / "config.json").exists():
        pytest.skip(f"{CROSS_ENCODER} is missing (run `make fixtures`)")


@pytest.fixture(scope="module")
def served():
    """The default model (`mini`, first) and the cross-encoder fixture (`rerank`)."""
    _need_cross_encoder()
    s = OrchidServer("--model", f"rerank={CROSS_ENCODER}", model=f"mini={ORCHID_MODEL}")
    yield s
    assert s.stop() == 0, s.log_text()


@pytest.fixture(scope="module")
def keyed():
    s = OrchidServer(env={"ORCHID_API_KEY": API_KEY})
    yield s
    assert s.stop() == 0, s.log_text()


@pytest.fixture(scope="module")
def reranker_only():
    _need_cross_encoder()
    s = OrchidServer(model=CROSS_ENCODER)
    yield s
    assert s.stop() == 0, s.log_text()


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    chromium, driver_bin = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver_bin:
        pytest.fail("chromium and chromedriver are needed (Debian's chromium, chromium-driver: "
                    "scripts/install-deps.sh --test installs them)")
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must not download anything
    options = Options()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-proxy-server", "--window-size=1280,1700", "--lang=en-US",
                "--disable-extensions", "--no-first-run"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_bin), options=options)
    driver.set_page_load_timeout(WAIT)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def artifacts():
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def screenshot(driver, folder, name, report):
    path = folder / f"{name}.png"
    driver.save_screenshot(str(path))
    report.append(("page screenshot", str(path)))


def wait_until(driver, condition, what, timeout=WAIT):
    from selenium.webdriver.support.ui import WebDriverWait
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.05).until(lambda d: condition(d))
    except Exception:
        errors = [e.text for e in driver.find_elements("css selector", ".error") if e.text]
        pytest.fail(f"timed out waiting for {what}; errors shown: {errors}; browser log: "
                    f"{driver.get_log('browser')}")


def status(driver, element_id):
    return driver.find_element("id", element_id).get_attribute("data-status")


def navigate(driver, url):
    driver.get_log("browser")  # drop what earlier pages logged
    driver.get(url)


def open_playground(driver, url, expect="connected"):
    navigate(driver, url + "/")
    wait_until(driver, lambda d: status(d, "connection") in ("connected", "error"), "connecting")
    assert status(driver, "connection") == expect, driver.find_element("id", "connect-error").text


def type_into(driver, element_id, text):
    el = driver.find_element("id", element_id)
    el.clear()
    el.send_keys(text)


def run_view(driver, section, button):
    driver.find_element("id", button).click()
    wait_until(driver, lambda d: status(d, section) in ("done", "error"), f"{section} to answer")
    return status(driver, section)


def severe_browser_messages(driver):
    return [m for m in driver.get_log("browser") if m.get("level") == "SEVERE"]


# --- the playground ---------------------------------------------------------------------------

def test_heatmap_prints_the_cosines_of_the_apis_embeddings(served, browser, artifacts, report):
    open_playground(browser, served.url)
    assert "mini" in browser.find_element("id", "server-info").text
    from selenium.webdriver.support.ui import Select
    models = Select(browser.find_element("id", "embed-model"))
    assert [o.text for o in models.options] == ["mini"]  # the reranker is not an embedder
    type_into(browser, "sentences", "\n".join(SENTENCES))
    assert run_view(browser, "similarity-section", "compare") == "done", \
        browser.find_element("id", "similarity-error").text

    cells = browser.find_elements("css selector", "#heatmap td")
    n = len(SENTENCES)
    assert len(cells) == n * n
    shown = np.full((n, n), np.nan)
    backgrounds = {}
    for td in cells:
        i, j = int(td.get_attribute("data-row")), int(td.get_attribute("data-col"))
        shown[i, j] = float(td.text)
        backgrounds[i, j] = td.value_of_css_property("background-color")
    rows = [th.text for th in browser.find_elements("css selector", "#heatmap th.sentence")]
    assert rows == [f"{i + 1}. {s}" for i, s in enumerate(SENTENCES)]

    r = requests.post(served.url + "/v1/embeddings", json={"input": SENTENCES, "model": "mini"},
                      timeout=60)
    assert r.status_code == 200, r.text
    e = np.array([d["embedding"] for d in r.json()["data"]], dtype=np.float64)
    unit = e / np.linalg.norm(e, axis=1, keepdims=True)
    expected = unit @ unit.T
    # Printed with 3 decimals: within rounding (5e-4) of the API's cosines, plus float noise.
    np.testing.assert_allclose(shown, expected, atol=1e-3)
    np.testing.assert_array_equal(np.diag(shown), np.ones(n))
    # Coloured by value: the most similar pair is a deeper colour than the least similar one.
    off = [(i, j) for i in range(n) for j in range(n) if i != j]
    hi = max(off, key=lambda p: expected[p])
    lo = min(off, key=lambda p: expected[p])
    assert backgrounds[hi] != backgrounds[lo]
    assert expected[0, 1] > expected[0, 4]  # guitar ~ instrument, not ~ stock markets
    assert not severe_browser_messages(browser)
    screenshot(browser, artifacts, "similarity", report)


@pytest.fixture(scope="module")
def pictures_served():
    """The CLIP fixture (tests/fixtures/clip) first, the text model beside it."""
    s = OrchidServer("--model", f"mini={ORCHID_MODEL}",
                     model=f"clip={REPO / 'tests' / 'fixtures' / 'clip' / 'models' / 'clip'}")
    yield s
    assert s.stop() == 0, s.log_text()


def test_pictures_view_ranks_by_the_apis_cosines(pictures_served, browser, artifacts, report):
    """A CLIP model's picture view: the texts ranked by the first picture and the pictures by
    the first text, in the order (and with the cosines) the API's own embeddings give."""
    import base64
    open_playground(browser, pictures_served.url)
    from selenium.webdriver.support.ui import Select
    assert [o.text for o in Select(browser.find_element("id", "picture-model")).options] == ["clip"]
    files = [REPO / "tests" / "fixtures" / "images" / "files" / n
             for n in ("jpeg_420.jpg", "png_rgba.png", "webp_lossy.webp")]
    browser.find_element("id", "pictures").send_keys("\n".join(str(f) for f in files))
    wait_until(browser, lambda d: len(d.find_elements("css selector", "#picture-thumbs img")) == 3,
               "the thumbnails")
    texts = ["a photo of a dog", "a red square", "a diagram"]
    type_into(browser, "picture-texts", "\n".join(texts))
    assert run_view(browser, "pictures-section", "rank-pictures") == "done", \
        browser.find_element("id", "pictures-error").text
    mime = {"jpg": "jpeg", "png": "png", "webp": "webp"}
    uris = [f"data:image/{mime[f.suffix[1:]]};base64," + base64.b64encode(f.read_bytes()).decode()
            for f in files]
    r = requests.post(pictures_served.url + "/v1/embeddings",
                      json={"model": "clip", "input": uris + texts}, timeout=60)
    assert r.status_code == 200, r.text
    e = np.array([d["embedding"] for d in r.json()["data"]], dtype=np.float64)
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    by_picture = sorted(range(3), key=lambda i: -e[0] @ e[3 + i])
    shown = [li.text for li in browser.find_elements("css selector", "#texts-by-picture li")]
    assert [s.split(None, 1)[1].strip() for s in shown] == [texts[i] for i in by_picture]
    np.testing.assert_allclose([float(s.split(None, 1)[0]) for s in shown],
                               [e[0] @ e[3 + i] for i in by_picture], atol=1e-3)
    by_text = sorted(range(3), key=lambda i: -e[3] @ e[i])
    titles = [img.get_attribute("title")
              for img in browser.find_elements("css selector", "#pictures-by-text img")]
    assert titles == [files[i].name for i in by_text]
    assert not severe_browser_messages(browser)
    screenshot(browser, artifacts, "pictures", report)


def test_rerank_view_ranks_like_post_rerank(served, browser, artifacts, report):
    open_playground(browser, served.url)
    from selenium.webdriver.support.ui import Select
    select = Select(browser.find_element("id", "rerank-model"))
    assert [o.text for o in select.options] == ["rerank"]
    query = "how do I keep bread fresh"
    documents = ["Store bread in a paper bag at room temperature.",
                 "The museum opens at nine.",
                 "Refrigerating bread makes it stale faster.",
                 "Sourdough starter needs feeding every day.",
                 "bread"]
    type_into(browser, "query", query)
    type_into(browser, "documents", "\n".join(documents))
    assert run_view(browser, "rerank-section", "rerank") == "done", \
        browser.find_element("id", "rerank-error").text
    items = browser.find_elements("css selector", "#ranking li")
    shown_order = [int(li.get_attribute("data-index")) for li in items]
    shown_scores = [float(li.find_element("css selector", ".score").text) for li in items]
    shown_docs = [li.find_element("css selector", ".doc").text for li in items]

    r = requests.post(served.url + "/rerank",
                      json={"query": query, "texts": documents, "model": "rerank"}, timeout=60)
    assert r.status_code == 200, r.text
    ranks = r.json()
    assert shown_order == [x["index"] for x in ranks]
    np.testing.assert_allclose(shown_scores, [x["score"] for x in ranks], atol=1e-4)
    assert shown_docs == [documents[x["index"]] for x in ranks]
    assert shown_scores == sorted(shown_scores, reverse=True)
    screenshot(browser, artifacts, "rerank", report)


def _check_tokens_view(driver, url, text):
    rows = driver.find_elements("css selector", "#tokens tr[data-index]")
    shown = []
    for tr in rows:
        cells = {c: tr.find_element("css selector", f"td.{c}").text
                 for c in ("id", "text", "start", "stop")}
        shown.append((int(cells["id"]), cells["text"],
                      int(cells["start"]) if cells["start"] else None,
                      int(cells["stop"]) if cells["stop"] else None))
    r = requests.post(url + "/tokenize", json={"inputs": text, "add_special_tokens": True},
                      timeout=60)
    assert r.status_code == 200, r.text
    tokens = r.json()[0]
    assert shown == [(t["id"], t["text"], t["start"], t["stop"]) for t in tokens]
    # Each highlighted span is its token's characters (offsets count code points).
    spans = driver.find_elements("css selector", "#token-text .tok[data-index]")
    assert spans
    highlighted = {}
    for span in spans:
        t = tokens[int(span.get_attribute("data-index"))]
        assert span.text == text[t["start"]:t["stop"]], (span.text, t)
        highlighted[int(span.get_attribute("data-index"))] = span.text
    # Every token with characters is highlighted (none overlap in these texts), the special
    # ones are not, and the view reads as the text itself.
    assert sorted(highlighted) == [k for k, t in enumerate(tokens) if t["start"] is not None]
    assert driver.find_element("id", "token-text").text == text.strip()
    return tokens


def test_tokens_view_shows_the_tokenize_tokens_over_their_characters(served, browser, artifacts,
                                                                      report):
    open_playground(browser, served.url)
    text = "Tokenizers split unbelievable words: naïve café owners!"
    type_into(browser, "tokenize-text", text)
    assert run_view(browser, "tokens-section", "tokenize") == "done", \
        browser.find_element("id", "tokens-error").text
    tokens = _check_tokens_view(browser, served.url, text)
    # A word split into pieces: tokens that meet without a space between them.
    assert any(a["stop"] == b["start"] and text[a["start"]].isalpha() and text[b["start"]].isalpha()
               for a, b in zip(tokens[1:-2], tokens[2:-1]))
    assert [t["special"] for t in (tokens[0], tokens[-1])] == [True, True]
    screenshot(browser, artifacts, "tokens", report)

    # Characters outside the BMP (two UTF-16 units in the page, one character in the offsets);
    # ChromeDriver types only BMP characters, so this text is set as a paste would.
    text = "emoji 🚀 then text 𝔘 and more"
    browser.execute_script("document.getElementById('tokenize-text').value = arguments[0];", text)
    assert run_view(browser, "tokens-section", "tokenize") == "done", \
        browser.find_element("id", "tokens-error").text
    _check_tokens_view(browser, served.url, text)


def test_with_an_api_key_the_page_loads_shows_the_401_and_works_with_the_key(
        keyed, browser, artifacts, report):
    # The pages need no key...
    for path in ("/", "/docs", "/docs/swagger-ui-bundle.js", "/docs/swagger-ui.css"):
        r = requests.get(keyed.url + path, headers={"Accept": BROWSER_ACCEPT}, timeout=30)
        assert r.status_code == 200, (path, r.status_code)
    assert requests.post(keyed.url + "/", json={"inputs": "a"}, timeout=30).status_code == 401

    # ... and without one the playground says why nothing works: the server's own message.
    open_playground(browser, keyed.url, expect="error")
    shown = browser.find_element("id", "connect-error").text
    message = requests.get(keyed.url + "/info", timeout=30).json()["error"]["message"]
    assert shown.startswith("HTTP 401"), shown
    assert message in shown, (message, shown)
    type_into(browser, "sentences", "one sentence\nanother sentence")
    assert run_view(browser, "similarity-section", "compare") == "error"
    assert message in browser.find_element("id", "similarity-error").text
    assert not browser.find_elements("css selector", "#heatmap td")
    assert not browser.find_element("id", "legend").is_displayed()
    screenshot(browser, artifacts, "api-key-missing", report)

    # A wrong key: the server's other message.
    type_into(browser, "api-key", "not-the-key")
    browser.find_element("id", "connect").click()
    wait_until(browser, lambda d: "not this server's" in d.find_element("id", "connect-error").text,
               "the wrong-key message")

    # The right key: it connects, and every view works.
    type_into(browser, "api-key", API_KEY)
    browser.find_element("id", "connect").click()
    wait_until(browser, lambda d: status(d, "connection") == "connected", "connecting with the key")
    assert browser.find_element("id", "connect-error").is_displayed() is False
    assert ORCHID_MODEL.name in browser.find_element("id", "server-info").text
    assert run_view(browser, "similarity-section", "compare") == "done", \
        browser.find_element("id", "similarity-error").text
    assert len(browser.find_elements("css selector", "#heatmap td")) == 4
    assert not browser.find_element("id", "similarity-error").is_displayed()
    type_into(browser, "tokenize-text", "keyed text")
    assert run_view(browser, "tokens-section", "tokenize") == "done"
    assert browser.find_element("id", "rerank-section").is_displayed() is False  # no reranker
    screenshot(browser, artifacts, "api-key-given", report)


def test_a_reranker_only_server_hides_the_similarity_view(reranker_only, browser):
    open_playground(browser, reranker_only.url)
    assert not browser.find_element("id", "similarity-section").is_displayed()
    assert browser.find_element("id", "rerank-section").is_displayed()
    assert "reranker" in browser.find_element("id", "server-info").text
    assert run_view(browser, "rerank-section", "rerank") == "done", \
        browser.find_element("id", "rerank-error").text
    assert len(browser.find_elements("css selector", "#ranking li")) == 4  # the page's examples


def test_a_model_with_task_adapters_gets_a_task_list(browser, served):
    """jina-embeddings-v3's tasks in the similarity view: the heatmap is that task's; the other
    models (served's MiniLM) show no task list."""
    if not (JINA / "config.json").exists():
        pytest.skip(f"{JINA} is missing (run `make fixtures`)")
    from selenium.webdriver.support.ui import Select
    open_playground(browser, served.url)
    assert not browser.find_element("id", "embed-task-row").is_displayed()
    s = OrchidServer(model=f"jina={JINA}")
    try:
        open_playground(browser, s.url)
        assert browser.find_element("id", "embed-task-row").is_displayed()
        tasks = Select(browser.find_element("id", "embed-task"))
        names = [o.get_attribute("value") for o in tasks.options]
        assert names == ["", "retrieval.query", "retrieval.passage", "separation", "classification",
                         "text-matching"]
        tasks.select_by_value("retrieval.query")
        type_into(browser, "sentences", "\n".join(SENTENCES[:3]))
        assert run_view(browser, "similarity-section", "compare") == "done", \
            browser.find_element("id", "similarity-error").text
        shown = np.full((3, 3), np.nan)
        for td in browser.find_elements("css selector", "#heatmap td"):
            shown[int(td.get_attribute("data-row")), int(td.get_attribute("data-col"))] = float(td.text)
        cos = {}
        for task in (None, "retrieval.query"):
            body = {"input": SENTENCES[:3], **({"task": task} if task else {})}
            e = np.array([d["embedding"] for d in requests.post(s.url + "/v1/embeddings", json=body,
                                                                timeout=60).json()["data"]])
            u = e / np.linalg.norm(e, axis=1, keepdims=True)
            cos[task] = u @ u.T
        np.testing.assert_allclose(shown, cos["retrieval.query"], atol=1e-3)
        assert np.abs(cos[None] - cos["retrieval.query"]).max() > 2e-3  # the task shows
        assert not severe_browser_messages(browser)
    finally:
        assert s.stop() == 0, s.log_text()


# --- /docs ------------------------------------------------------------------------------------

def test_docs_renders_every_operation_of_openapi_json(served, browser, artifacts, report):
    navigate(browser, served.url + "/docs")
    wait_until(browser, lambda d: len(d.find_elements("css selector", ".opblock")) > 0,
               "Swagger UI to render the operations")
    spec = requests.get(served.url + "/openapi.json", timeout=30).json()
    want = sorted((m.upper(), p) for p, ops in spec["paths"].items() for m in ops
                  if m in ("get", "post", "put", "delete", "patch"))

    def operations(d):
        return sorted({
            (b.find_element("css selector", ".opblock-summary-method").text,
             b.find_element("css selector", ".opblock-summary-path").get_attribute("data-path"))
            for b in d.find_elements("css selector", ".opblock")})

    wait_until(browser, lambda d: len(operations(d)) >= len(want), f"{len(want)} operations")
    shown = operations(browser)
    assert shown == want
    for path in ("/v1/embeddings", "/rerank", "/tokenize", "/v1/rerank"):
        assert ("POST", path) in shown
    title = browser.find_element("css selector", ".swagger-ui .info .title").text
    assert title.startswith(spec["info"]["title"]), title
    assert not browser.find_elements("css selector", ".swagger-ui .errors-wrapper .error")
    assert not severe_browser_messages(browser)
    screenshot(browser, artifacts, "docs", report)


# --- over plain HTTP --------------------------------------------------------------------------

def test_pages_and_assets_over_http(served):
    r = requests.get(served.url + "/", headers={"Accept": BROWSER_ACCEPT}, timeout=30)
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "text/html; charset=utf-8"
    assert "<title>orchid playground</title>" in r.text
    # Without asking for HTML (curl, requests, HF's clients), GET / is TEI's health check.
    r = requests.get(served.url + "/", timeout=30)
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/json"
    assert r.json()["status"] == "ok"
    assert r.json() == requests.get(served.url + "/health", timeout=30).json()
    docs = requests.get(served.url + "/docs", timeout=30)
    assert docs.status_code == 200 and docs.headers["Content-Type"].startswith("text/html")
    for asset, kind, marker in (("/docs/swagger-ui-bundle.js", "text/javascript", "SwaggerUIBundle"),
                                ("/docs/swagger-ui.css", "text/css", ".swagger-ui")):
        assert f'"{asset}"' in docs.text
        r = requests.get(served.url + asset, timeout=30)
        assert r.status_code == 200, asset
        assert r.headers["Content-Type"].startswith(kind), asset
        assert int(r.headers["Content-Length"]) == len(r.content) > 100_000
        assert marker in r.text
    assert requests.post(served.url + "/docs", json={}, timeout=30).status_code == 405


def test_post_root_embeds_with_an_embedder(served):
    body = {"inputs": ["A man is playing a guitar.", "Stock markets fell."]}
    root = requests.post(served.url + "/", json=body, timeout=60)
    assert root.status_code == 200, root.text
    embed = requests.post(served.url + "/embed", json=body, timeout=60).json()
    np.testing.assert_allclose(root.json(), embed, atol=1e-6)
    assert np.asarray(root.json()).shape == (2, 384)


def test_post_root_predicts_or_reranks_with_a_reranker(reranker_only):
    url = reranker_only.url
    # Hugging Face's InferenceClient (text_classification) posts `inputs`: /predict.
    body = {"inputs": [["what is a cat", "a small feline"], ["what is a cat", "a stock index"]]}
    root = requests.post(url + "/", json=body, timeout=60)
    assert root.status_code == 200, root.text
    assert root.json() == requests.post(url + "/predict", json=body, timeout=60).json()
    assert [p[0]["label"] for p in root.json()] == ["LABEL_0", "LABEL_0"]
    # TEI's rerank body: /rerank, as TEI's POST / on a reranker.
    body = {"query": "what is a cat", "texts": ["a small feline", "a stock index", "cats"]}
    root = requests.post(url + "/", json=body, timeout=60)
    assert root.status_code == 200, root.text
    assert root.json() == requests.post(url + "/rerank", json=body, timeout=60).json()
    assert sorted(x["index"] for x in root.json()) == [0, 1, 2]


def test_the_gateway_serves_the_pages_too(browser):
    worker = Worker()
    gateway = None
    try:
        gateway = Gateway([worker])
        r = requests.get(gateway.url + "/", headers={"Accept": BROWSER_ACCEPT}, timeout=30)
        assert r.status_code == 200 and "<title>orchid playground</title>" in r.text
        assert requests.get(gateway.url + "/docs/swagger-ui-bundle.js", timeout=30).ok
        root = requests.post(gateway.url + "/", json={"inputs": "hello"}, timeout=60)
        assert root.status_code == 200 and np.asarray(root.json()).shape == (1, 384)
        open_playground(browser, gateway.url)
        type_into(browser, "sentences", "through the gateway\nand its worker")
        assert run_view(browser, "similarity-section", "compare") == "done", \
            browser.find_element("id", "similarity-error").text
        assert len(browser.find_elements("css selector", "#heatmap td")) == 4
    finally:
        if gateway is not None:
            gateway.proc.stop()
        worker.proc.stop()
