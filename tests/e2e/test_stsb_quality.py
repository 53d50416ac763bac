"""STS-B English test set through the server: the Spearman correlation of cosine similarity with
the gold scores must equal sentence-transformers' own (committed in
tests/fixtures/stsb/stsb_spearman.json by make_reference.py) to 4 decimals."""
import csv
import json

import numpy as np
import pytest
import requests

from support import TEST_DATA, STSB_FIXTURES, OrchidServer, rows

CHUNK = 128


def average_ranks(x):
    """Ranks 1..n, ties sharing the average of their ranks (as scipy.stats.rankdata)."""
    x = np.asarray(x)
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    ranks = np.empty(len(x), dtype=np.float64)
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and sorted_x[j + 1] == sorted_x[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def spearman(a, b):
    ra, rb = average_ranks(a), average_ranks(b)
    ra -= ra.mean()
    rb -= rb.mean()
    return float((ra * rb).sum() / np.sqrt((ra * ra).sum() * (rb * rb).sum()))


def test_average_ranks_and_spearman():
    np.testing.assert_array_equal(average_ranks([10, 20, 20, 5]), [2, 3.5, 3.5, 1])
    assert abs(spearman([1, 2, 3, 4], [10, 20, 30, 40]) - 1.0) < 1e-12
    assert abs(spearman([1, 2, 3, 4], [4, 3, 2, 1]) + 1.0) < 1e-12


def stsb_spearman(url):
    """(Spearman of the server's cosine similarities with the gold scores, the reference file)."""
    expected = json.loads((STSB_FIXTURES / "stsb_spearman.json").read_text())
    return stsb_spearman_of(url, expected["pairs"]), expected


def stsb_spearman_of(url, expected_pairs=1379):
    """The Spearman correlation of the server's cosine similarities with the STS-B English test
    set's gold scores."""
    with open(TEST_DATA / "stsb" / "stsb-en-test.csv", newline="", encoding="utf-8") as f:
        pairs = [(r[0], r[1], float(r[2])) for r in csv.reader(f)]
    assert len(pairs) == expected_pairs

    texts = sorted({s for p in pairs for s in p[:2]})
    index = {t: i for i, t in enumerate(texts)}
    session = requests.Session()
    chunks = []
    for start in range(0, len(texts), CHUNK):
        r = session.post(url + "/v1/embeddings",
                         json={"input": texts[start:start + CHUNK], "encoding_format": "base64"},
                         timeout=600)
        assert r.status_code == 200, r.text
        chunks.append(rows(r.json()))
    emb = np.concatenate(chunks).astype(np.float64)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    a = emb[[index[p[0]] for p in pairs]]
    b = emb[[index[p[1]] for p in pairs]]
    cos = (a * b).sum(axis=1)
    return spearman(cos, [p[2] for p in pairs])


def test_stsb_spearman_matches_sentence_transformers(server, report):
    ours, expected = stsb_spearman(server.url)
    theirs = expected["spearman_cosine"]
    pairs = expected["pairs"]
    report.append(("STS-B en test Spearman (cosine)",
                   f"orchid {ours:.6f}, sentence-transformers {theirs:.6f} "
                   f"({pairs} pairs, {expected['model']})"))
    print(f"\nSTS-B en test Spearman: orchid {ours:.6f}, sentence-transformers {theirs:.6f}")
    assert abs(ours - theirs) < 5e-5, f"orchid {ours:.6f} vs sentence-transformers {theirs:.6f}"


@pytest.mark.parametrize("flags,bound", [
    # Not bit-faithful: within 1e-3 of sentence-transformers' fp32 Spearman (docs/engine.md).
    (("--dtype", "bfloat16"), 1e-3),
    # Every product on OpenBLAS instead of the packed kernel: the fp32 bar.
    (("--gemm", "blas"), 5e-5),
    # int8 (issue 31): the quality bar of the bfloat16 path (served whatever its start-up check
    # says: this is the check that matters here).
    (("--dtype", "int8", "--int8-serve-anyway"), 1e-3),
], ids=["bfloat16", "blas", "int8"])
def test_stsb_spearman_with_other_engine_settings(report, flags, bound):
    """The engine's other numeric paths, on the quality that matters."""
    other = OrchidServer(*flags)
    try:
        ours, expected = stsb_spearman(other.url)
    finally:
        assert other.stop() == 0, other.log_text()
    theirs = expected["spearman_cosine"]
    what = " ".join(flags)
    report.append((f"STS-B en test Spearman, {what}",
                   f"orchid {ours:.6f}, sentence-transformers (fp32) {theirs:.6f}, "
                   f"difference {ours - theirs:+.6f}"))
    print(f"\nSTS-B en test Spearman, {what}: orchid {ours:.6f}, sentence-transformers {theirs:.6f}")
    assert abs(ours - theirs) < bound, f"orchid {what} {ours:.6f} vs sentence-transformers {theirs:.6f}"
