"""`orchid tokenize` must give exactly the ids of the reference Hugging Face `tokenizers`.

Compares, live against `tokenizers.Tokenizer.from_file(...).encode_batch`:
  * every sentence (both columns) of every data/stsb/*.csv file (11 languages, train/dev/test),
  * the hand-made edge cases of tests/fixtures/tokenizer/edge_cases.py (both lists),
  * a sweep of every Unicode scalar value, alone and between letters,
with special tokens (all of it); without special tokens and with truncation on either side
(every 5th STS sentence plus all edge cases, to keep the run short on 2 cores).

Env: ORCHID_BIN (build/orchid), ORCHID_MODEL (model dir holding tokenizer.json).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "fixtures" / "tokenizer"))
from compare import stsb_sentences  # noqa: E402
from edge_cases import edge_cases, more_edge_cases  # noqa: E402

import tokenizers  # noqa: E402  (a hard dependency: a missing reference must fail, not skip)

ORCHID_BIN = Path(os.environ.get("ORCHID_BIN", REPO / "build" / "orchid"))
ORCHID_MODEL = Path(os.environ.get("ORCHID_MODEL", REPO / "models" / "all-MiniLM-L6-v2"))
TOKENIZER_JSON = ORCHID_MODEL / "tokenizer.json"


def codepoint_sweep():
    """Every scalar value (surrogates excepted), 64 per line: alone, and inside a word."""
    cps = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    lines = []
    for i in range(0, len(cps), 64):
        chunk = [chr(c) for c in cps[i:i + 64]]
        lines.append(" ".join(chunk))
        lines.append(" ".join(f"a{c}b" for c in chunk))
    return lines


def reference(truncation=None):
    tok = tokenizers.Tokenizer.from_file(str(TOKENIZER_JSON))
    tok.no_padding()  # tokenizer.json asks for padding/truncation to 128: compared without
    tok.no_truncation()  # them here (orchid tokenize --no-truncation); see the test below
    if truncation is not None:
        tok.enable_truncation(truncation[0], direction=truncation[1])
    return tok


def run_orchid(texts, *args, ensure_ascii=False):
    if "--max-length" not in args:  # reference() runs without tokenizer.json's truncation
        args = (*args, "--no-truncation")
    payload = "".join(json.dumps(t, ensure_ascii=ensure_ascii) + "\n" for t in texts)
    proc = subprocess.run([str(ORCHID_BIN), "tokenize", "--tokenizer", str(TOKENIZER_JSON), *args],
                          input=payload.encode("utf-8"), capture_output=True, timeout=300)
    assert proc.returncode == 0, f"orchid tokenize failed ({proc.returncode}): {proc.stderr.decode()[:2000]}"
    lines = proc.stdout.decode().splitlines()
    assert len(lines) == len(texts), f"{len(texts)} inputs but {len(lines)} output lines"
    return [json.loads(line) for line in lines]


def compare(request, name, texts, ours, ref_ids):
    mismatches = [i for i, (a, b) in enumerate(zip(ours, ref_ids)) if a != b]
    summary = f"compared {len(texts)} texts, {len(mismatches)} mismatches"
    print(f"[{name}] {summary}")
    try:  # the e2e conftest's summary section, when present
        request.getfixturevalue("report").append((f"tokenizer exactness [{name}]", summary))
    except pytest.FixtureLookupError:
        pass
    if mismatches:
        report = []
        for i in mismatches[:10]:
            a, b = ours[i], ref_ids[i]
            first = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
            report.append(f"  #{i} {texts[i][:120]!r}\n     first difference at token {first}: "
                          f"orchid {a[max(0, first - 3):first + 5]} vs reference {b[max(0, first - 3):first + 5]}"
                          f" (lengths {len(a)} / {len(b)})")
        pytest.fail(f"[{name}] {len(mismatches)} of {len(texts)} texts differ from `tokenizers` "
                    f"{tokenizers.__version__}; first ones:\n" + "\n".join(report))


@pytest.fixture(scope="module")
def corpus():
    assert ORCHID_BIN.exists(), f"no orchid binary at {ORCHID_BIN} (set ORCHID_BIN)"
    assert TOKENIZER_JSON.exists(), f"no tokenizer.json at {TOKENIZER_JSON} (set ORCHID_MODEL)"
    return stsb_sentences() + edge_cases() + more_edge_cases()


def test_stsb_and_edge_cases_exact(request, corpus):
    ref = [e.ids for e in reference().encode_batch(corpus)]
    compare(request, "stsb+edge, special tokens", corpus, run_orchid(corpus), ref)
    # The same through \uXXXX escapes (surrogate pairs for astral characters).
    compare(request, "stsb+edge, ASCII-escaped JSON", corpus, run_orchid(corpus, ensure_ascii=True), ref)


@pytest.fixture(scope="module")
def subset(corpus):
    edges = edge_cases() + more_edge_cases()
    return corpus[:-len(edges):5] + edges


def test_without_special_tokens_exact(request, subset):
    ref = [e.ids for e in reference().encode_batch(subset, add_special_tokens=False)]
    compare(request, "stsb/5+edge, no special tokens", subset, run_orchid(subset, "--no-special-tokens"), ref)


@pytest.mark.parametrize("max_length,side", [(16, "right"), (16, "left"), (2, "right"), (512, "left")])
def test_truncation_exact(request, subset, max_length, side):
    ref = [e.ids for e in reference((max_length, side)).encode_batch(subset)]
    ours = run_orchid(subset, "--max-length", str(max_length), "--truncation-side", side)
    compare(request, f"stsb/5+edge, max_length={max_length} {side}", subset, ours, ref)


def test_truncation_without_special_tokens_exact(request, subset):
    ref = [e.ids for e in reference((8, "right")).encode_batch(subset, add_special_tokens=False)]
    ours = run_orchid(subset, "--max-length", "8", "--no-special-tokens")
    compare(request, "stsb/5+edge, max_length=8, no special tokens", subset, ours, ref)


def test_every_codepoint_exact(request):
    assert ORCHID_BIN.exists(), f"no orchid binary at {ORCHID_BIN} (set ORCHID_BIN)"
    lines = codepoint_sweep()
    ref = [e.ids for e in reference().encode_batch(lines)]
    compare(request, "code point sweep", lines, run_orchid(lines, ensure_ascii=True), ref)


def test_malformed_line_is_reported():
    payload = b'"fine"\nnot json\n"never reached"\n'
    proc = subprocess.run([str(ORCHID_BIN), "tokenize", "--tokenizer", str(TOKENIZER_JSON)],
                          input=payload, capture_output=True, timeout=60)
    assert proc.returncode != 0
    assert b"line 2" in proc.stderr, proc.stderr
    assert proc.stdout.decode().splitlines() == ["[101,2986,102]"]


def test_invalid_utf8_and_lone_surrogate_are_rejected():
    for bad in (b'"caf\xc3"\n', b'"\xff"\n', b'"\\ud800"\n', b'"\\udc00x"\n'):
        proc = subprocess.run([str(ORCHID_BIN), "tokenize", "--tokenizer", str(TOKENIZER_JSON)],
                              input=bad, capture_output=True, timeout=60)
        assert proc.returncode != 0, bad
        assert b"line 1" in proc.stderr, (bad, proc.stderr)


def test_truncation_section_of_tokenizer_json_applies_by_default(request, corpus):
    """Without --max-length, `orchid tokenize` applies tokenizer.json's truncation section as
    `tokenizers` does when it loads the file (all-MiniLM-L6-v2's: 128 tokens, longest first);
    --no-truncation turns it off."""
    ref = tokenizers.Tokenizer.from_file(str(TOKENIZER_JSON))
    ref.no_padding()  # keep the file's truncation, drop only its padding
    assert ref.truncation is not None and ref.truncation["max_length"] == 128, ref.truncation
    untruncated = reference()
    long_texts = [t for t, e in zip(corpus, untruncated.encode_batch(corpus)) if len(e.ids) > 128][:50]
    assert long_texts, "no input longer than 128 tokens in the corpus"
    texts = long_texts + corpus[:50]
    payload = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in texts)
    for args, want in (((), [e.ids for e in ref.encode_batch(texts)]),
                       (("--no-truncation",), [e.ids for e in untruncated.encode_batch(texts)])):
        proc = subprocess.run([str(ORCHID_BIN), "tokenize", "--tokenizer", str(TOKENIZER_JSON), *args],
                              input=payload.encode("utf-8"), capture_output=True, timeout=300)
        assert proc.returncode == 0, proc.stderr.decode()[:2000]
        ours = [json.loads(line) for line in proc.stdout.decode().splitlines()]
        compare(request, f"file truncation {args or 'default'}", texts, ours, want)
    assert max(len(ids) for ids in ours) > 128  # --no-truncation really kept the long ones
