"""`orchid tokenize` must give exactly the ids of Hugging Face `tokenizers` for BPE with byte
fallback: data/tokenizers/gemma3/tokenizer.json (Replace ' '→'▁', Split on ' ', BPE with
byte_fallback <0xNN> tokens and fuse_unk, 6,415 added tokens, <bos> template).

Compared live: every STS-B sentence (both columns, 11 languages, all splits) + all edge cases
(edge_cases.py) with special tokens; without special tokens and with truncation on every 7th
STS-B sentence + the edge cases (also the byte offsets of every token, --offsets); and a
sweep of every Unicode scalar value.

Env: ORCHID_BIN (default build/orchid).
"""
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "fixtures" / "tokenizer"))
from compare import (TOKENIZERS_DIR, check_ids, codepoint_sweep, compare_offsets,  # noqa: E402
                     stsb_sentences)
from edge_cases import edge_cases, more_edge_cases  # noqa: E402

import tokenizers  # noqa: E402  (a hard dependency: a missing reference must fail, not skip)

ORCHID_BIN = Path(os.environ.get("ORCHID_BIN", REPO / "build" / "orchid"))
GEMMA3 = TOKENIZERS_DIR / "gemma3" / "tokenizer.json"


@pytest.fixture(scope="module")
def corpus():
    assert ORCHID_BIN.exists(), f"no orchid binary at {ORCHID_BIN} (set ORCHID_BIN)"
    assert GEMMA3.exists(), f"no tokenizer at {GEMMA3}"
    return stsb_sentences() + edge_cases() + more_edge_cases()


@pytest.fixture(scope="module")
def subset(corpus):
    edges = edge_cases() + more_edge_cases()
    return corpus[:-len(edges):7] + edges


def check(request, name, texts, *args, **kwargs):
    check_ids(request, name, ORCHID_BIN, tokenizers, GEMMA3, texts, *args, **kwargs)


def test_gemma3_stsb_and_edge_cases_exact(request, corpus):
    check(request, "gemma3: stsb+edge", corpus)


def test_gemma3_without_special_tokens_exact(request, subset):
    check(request, "gemma3: stsb/7+edge, no special tokens", subset, "--no-special-tokens",
          add_special_tokens=False)


@pytest.mark.parametrize("max_length,side", [(16, "right"), (16, "left")])
def test_gemma3_truncation_exact(request, subset, max_length, side):
    check(request, f"gemma3: stsb/7+edge, max_length={max_length} {side}", subset,
          "--max-length", str(max_length), "--truncation-side", side, truncation=(max_length, side))


def test_gemma3_every_codepoint_exact(request):
    check(request, "gemma3: code point sweep", codepoint_sweep(), ensure_ascii=True)


def test_gemma3_offsets_exact(request, subset):
    compare_offsets(request, "gemma3: stsb/7+edge", ORCHID_BIN, tokenizers, GEMMA3, subset)
