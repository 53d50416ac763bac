"""`orchid tokenize` must give exactly the ids of Hugging Face `tokenizers` for Unigram:
tests/fixtures/tokenizer/unigram_xlmr/tokenizer.json, an XLM-RoBERTa-style tokenizer (Precompiled
nmt_nfkc charsmap + Strip + Replace(Regex), Metaspace, Unigram with 16,002 pieces, <s> … </s>)
trained and converted by make_unigram.py there (no real XLM-R tokenizer.json is available here).

Compared live: every STS-B sentence (both columns, 11 languages, all splits) + all edge cases
(edge_cases.py) with special tokens; token byte offsets (--offsets), without special tokens and
with truncation on every 7th STS-B sentence + the edge cases; a sweep of every Unicode scalar value; and, on every 7th
STS-B sentence + the edge cases, variants written into a temporary directory with other
settings the converters produce: Sequence[WhitespaceSplit, Metaspace] (transformers v5's
XLMRobertaTokenizer), Metaspace(prepend_scheme="first", split=false), and byte_fallback with
<0xNN> pieces.

Env: ORCHID_BIN (default build/orchid).
"""
import json
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "fixtures" / "tokenizer"))
from compare import check_ids, codepoint_sweep, compare_offsets, stsb_sentences  # noqa: E402
from edge_cases import edge_cases, more_edge_cases  # noqa: E402

import tokenizers  # noqa: E402  (a hard dependency: a missing reference must fail, not skip)

ORCHID_BIN = Path(os.environ.get("ORCHID_BIN", REPO / "build" / "orchid"))
UNIGRAM = REPO / "tests" / "fixtures" / "tokenizer" / "unigram_xlmr" / "tokenizer.json"


@pytest.fixture(scope="module")
def corpus():
    assert ORCHID_BIN.exists(), f"no orchid binary at {ORCHID_BIN} (set ORCHID_BIN)"
    return stsb_sentences() + edge_cases() + more_edge_cases()


@pytest.fixture(scope="module")
def subset(corpus):
    edges = edge_cases() + more_edge_cases()
    return corpus[:-len(edges):7] + edges


def check(request, name, path, texts, *args, **kwargs):
    check_ids(request, name, ORCHID_BIN, tokenizers, path, texts, *args, **kwargs)


def test_unigram_stsb_and_edge_cases_exact(request, corpus):
    check(request, "unigram: stsb+edge", UNIGRAM, corpus)


def test_unigram_without_special_tokens_exact(request, subset):
    check(request, "unigram: stsb/7+edge, no special tokens", UNIGRAM, subset, "--no-special-tokens",
          add_special_tokens=False)


@pytest.mark.parametrize("max_length,side", [(16, "right"), (16, "left")])
def test_unigram_truncation_exact(request, subset, max_length, side):
    check(request, f"unigram: stsb/7+edge, max_length={max_length} {side}", UNIGRAM, subset,
          "--max-length", str(max_length), "--truncation-side", side, truncation=(max_length, side))


def test_unigram_every_codepoint_exact(request):
    check(request, "unigram: code point sweep", UNIGRAM, codepoint_sweep(), ensure_ascii=True)


def _variant(doc, name):
    if name == "whitespace-split+metaspace":
        doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
            {"type": "WhitespaceSplit"},
            {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}]}
    elif name == "metaspace-first-nosplit":
        doc["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first",
                                "split": False}
    elif name == "byte-fallback":
        doc["model"]["byte_fallback"] = True
        mask = doc["model"]["vocab"].pop()  # keep <mask> last, as XLM-R does
        doc["model"]["vocab"] += [[f"<0x{b:02X}>", 0.0] for b in range(256)] + [mask]
        for t in doc["added_tokens"]:
            if t["content"] == "<mask>":
                t["id"] = len(doc["model"]["vocab"]) - 1
    return doc


@pytest.mark.parametrize("name", ["whitespace-split+metaspace", "metaspace-first-nosplit", "byte-fallback"])
def test_unigram_variants_exact(request, subset, tmp_path, name):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(_variant(json.loads(UNIGRAM.read_text(encoding="utf-8")), name)), encoding="utf-8")
    tokenizers.Tokenizer.from_file(str(path))  # the reference accepts the variant
    check(request, f"unigram {name}: stsb/7+edge", path, subset)


def test_unigram_offsets_exact(request, subset):
    compare_offsets(request, "unigram: stsb/7+edge", ORCHID_BIN, tokenizers, UNIGRAM, subset)
