"""`orchid embed`: offline bulk embedding of a JSON Lines file into .npy or .jsonl, against
sentence-transformers' own embeddings of the same sentences (tests/fixtures/stsb); a ColBERT
model's per-token vectors against PyLate's (tests/fixtures/colbert, make_colbert.py)."""
import json
import subprocess

import numpy as np
import pytest

from support import (EMBEDDINGS, LONG_INDEX, MIN_COSINE, ORCHID_BIN, ORCHID_MODEL, REPO, SENTENCES,
                     cosines)


def embed(tmp_path, lines, out_name, *args, model=ORCHID_MODEL):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(lines), encoding="utf-8")
    out = tmp_path / out_name
    p = subprocess.run([str(ORCHID_BIN), "embed", "--model", str(model), "--input", str(src),
                        "--output", str(out), "--threads", "2", *args],
                       capture_output=True, text=True, timeout=300)
    return p, out


def mixed_lines():
    """Every reference sentence: bare JSON strings and objects with ids, a blank line between."""
    lines = []
    for i, s in enumerate(SENTENCES):
        lines.append(json.dumps(s) if i % 3 == 0 else json.dumps({"id": i, "text": s}))
        lines.append("\n")
        if i == 4:
            lines.append("   \n")
    return lines


def test_npy_matches_the_reference_in_input_order(tmp_path):
    p, out = embed(tmp_path, mixed_lines(), "e.npy", "--truncate", "--chunk", "7")
    assert p.returncode == 0, p.stdout + p.stderr
    got = np.load(out)
    assert got.dtype == np.float32 and got.shape == EMBEDDINGS.shape
    c = cosines(got, EMBEDDINGS)  # the long input too: sentence-transformers truncates it
    assert c.min() >= MIN_COSINE, (c.argmin(), c.min())
    assert not (tmp_path / "e.npy.partial").exists()


def test_jsonl_keeps_ids_and_dimensions(tmp_path):
    p, out = embed(tmp_path, mixed_lines(), "e.jsonl", "--truncate", "--dimensions", "64")
    assert p.returncode == 0, p.stdout + p.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["index"] for r in rows] == list(range(len(SENTENCES)))
    assert [r.get("id") for r in rows] == [None if i % 3 == 0 else i for i in range(len(SENTENCES))]
    got = np.asarray([r["embedding"] for r in rows])
    assert got.shape == (len(SENTENCES), 64)
    ref = EMBEDDINGS[:, :64] / np.linalg.norm(EMBEDDINGS[:, :64], axis=1, keepdims=True)
    assert cosines(got, ref).min() >= MIN_COSINE
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("line, message", [
    ("{\"text\": 3}\n", "in.jsonl:2: expected a non-empty JSON string"),
    ("{\"body\": \"x\"}\n", "in.jsonl:2: the object has no \"text\""),
    ("not json\n", "in.jsonl:2: not JSON"),
])
def test_a_bad_line_fails_the_run_naming_it_and_writes_nothing(tmp_path, line, message):
    p, out = embed(tmp_path, [json.dumps("fine") + "\n", line], "e.npy")
    assert p.returncode != 0
    assert message in p.stdout + p.stderr, p.stdout + p.stderr
    assert not out.exists() and not (tmp_path / "e.npy.partial").exists()


def test_an_over_long_input_needs_truncate(tmp_path):
    lines = [json.dumps(SENTENCES[0]) + "\n", json.dumps(SENTENCES[LONG_INDEX]) + "\n"]
    p, out = embed(tmp_path, lines, "e.npy")
    assert p.returncode == 1
    assert "in.jsonl:2: has" in p.stdout + p.stderr and "pass --truncate" in p.stdout + p.stderr, \
        p.stdout + p.stderr
    assert not out.exists()


def colbert(name):
    model = REPO / "models" / "fixtures" / name
    if not (model / "config.json").exists():
        pytest.fail(f"{model} missing (run `make fixtures`)")
    return model, json.loads((REPO / "tests" / "fixtures" / "colbert" / f"{name}.json").read_text())


def assert_pylate_vectors(got, expected):
    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    assert got.shape == expected.shape
    c = (got * expected).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(expected, axis=1)
    assert c.min() >= 0.99999, c.min()


@pytest.mark.parametrize("name", ["colbert-bert", "colbert-xlmr", "colbert-stanford"])
@pytest.mark.parametrize("kind", ["queries", "documents"])
def test_colbert_token_vectors_are_pylates(tmp_path, name, kind):
    """A ColBERT model: each input's vectors as PyLate's encode(is_query=...) gives them (queries
    [MASK]-expanded, documents without punctuation, normalised); .npy holds them one input after
    the other with OUT.offsets.npy beside it, .jsonl an array of vectors per line."""
    model, golden = colbert(name)
    items = golden[kind]
    lines = [json.dumps({"id": f"t{i}", "text": x["text"]}) + "\n" for i, x in enumerate(items)]
    args = ["--input-type", "query"] if kind == "queries" else []
    p, out = embed(tmp_path, lines, "v.npy", "--chunk", "2", *args, model=model)
    assert p.returncode == 0, p.stdout + p.stderr
    vectors, offsets = np.load(out), np.load(tmp_path / "v.offsets.npy")
    assert vectors.dtype == np.float32 and offsets.dtype == np.int64
    assert offsets.tolist() == np.cumsum([0] + [len(x["vectors"]) for x in items]).tolist()
    assert vectors.shape == (offsets[-1], len(items[0]["vectors"][0]))
    for i, x in enumerate(items):
        assert_pylate_vectors(vectors[offsets[i]:offsets[i + 1]], x["vectors"])
    assert not list(tmp_path.glob("*.partial"))

    p, out = embed(tmp_path, lines, "v.jsonl", *args, model=model)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["index"] for r in rows] == list(range(len(items)))
    assert [r["id"] for r in rows] == [f"t{i}" for i in range(len(items))]
    for r, x in zip(rows, items):
        assert_pylate_vectors(r["embedding"], x["vectors"])


def test_colbert_refuses_dimensions_and_writes_nothing(tmp_path):
    model, golden = colbert("colbert-bert")
    p, out = embed(tmp_path, [json.dumps("hello") + "\n"], "v.npy", "--dimensions", "8",
                   model=model)
    assert p.returncode == 2
    assert "late-interaction" in p.stdout + p.stderr, p.stdout + p.stderr
    assert not list(tmp_path.glob("v.*"))
