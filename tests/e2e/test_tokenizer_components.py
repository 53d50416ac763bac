"""`orchid tokenize` against Hugging Face `tokenizers` for single components swapped into real
models: NFKC / NFKD, StripAccents, the Whitespace / Punctuation / Digits pre-tokenizers, Split
regexes that are not hand-scanned (PCRE2), added tokens' single_word, and ByteLevel /
RobertaProcessing trim_offsets.

The tokenizer.json files are built by the reference library itself
(tests/fixtures/tokenizer/make_components.py) into a temporary directory. Compared live, in one
`orchid tokenize --offsets` run per variant: ids and byte offsets over every 3rd STS-B sentence
(both columns, 11 languages, all splits) + all edge cases (edge_cases.py); and, for the
components whose character classes come from generated tables, ids over a sweep of every Unicode
scalar value. (The base tokenizers these variants start from are compared over every STS-B
sentence in test_tokenizer_exact.py and test_tokenizer_qwen3.py; a third of it per variant keeps
`make test` within its time budget.)

Env: ORCHID_BIN (default build/orchid).
"""
import json
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "fixtures" / "tokenizer"))
from compare import (check_ids, codepoint_sweep, compare_offsets, reference_tokenizer,  # noqa: E402
                     stsb_sentences)
from edge_cases import edge_cases, more_edge_cases  # noqa: E402
import make_components  # noqa: E402

import tokenizers  # noqa: E402  (a hard dependency: a missing reference must fail, not skip)

ORCHID_BIN = Path(os.environ.get("ORCHID_BIN", REPO / "build" / "orchid"))

# Components whose character classes are probed tables (regex_tables.inc, which PCRE2 regexes
# get spelled out too): swept over every code point.
SWEPT = {"wordpiece-split-pcre2-words", "qwen3-split-pcre2-byte-level",
         "qwen3-split-pcre2-letters-merged-next", "qwen3-split-pcre2-letters-inverted",
         "wordpiece-nfkc", "wordpiece-nfkd", "wordpiece-nfd-strip-accents",
         "wordpiece-nfkd-strip-accents-whitespace", "wordpiece-strip-accents-alone", "qwen3-nfkc",
         "qwen3-nfkd", "wordpiece-whitespace", "wordpiece-punctuation-isolated",
         "wordpiece-punctuation-merged_with_next", "wordpiece-digits-individual",
         "wordpiece-digits-contiguous"}
TRIM = ["qwen3-trim-offsets", "qwen3-roberta-trim-offsets"]
ALL = list(make_components.VARIANTS)


@pytest.fixture(scope="module")
def subset():
    """Every 3rd STS-B sentence and every edge case."""
    assert ORCHID_BIN.exists(), f"no orchid binary at {ORCHID_BIN} (set ORCHID_BIN)"
    return stsb_sentences()[::3] + edge_cases() + more_edge_cases()


@pytest.fixture(scope="module")
def variant_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("tokenizer-components")


def variant(variant_dir, name):
    path = variant_dir / f"{name}.json"
    if not path.exists():
        make_components.write(name, path)
    return path


def check(request, name, path, texts, ensure_ascii=False):
    check_ids(request, name, ORCHID_BIN, tokenizers, path, texts, ensure_ascii=ensure_ascii)


def test_variants_use_the_component_under_test(variant_dir):
    """Guards the generator: each file really holds the component its name says."""
    expect = {
        "wordpiece-nfkc": "NFKC", "qwen3-nfkd": "NFKD", "wordpiece-nfd-strip-accents": "StripAccents",
        "wordpiece-whitespace": '"Whitespace"', "wordpiece-punctuation-contiguous": '"Contiguous"',
        "wordpiece-digits-individual": '"individual_digits": true',
        "qwen3-split-pcre2-letters-inverted": '"invert": true', "qwen3-trim-offsets": '"trim_offsets": true',
        "qwen3-roberta-trim-offsets": "RobertaProcessing",
    }
    for name, needle in expect.items():
        text = json.dumps(json.loads(variant(variant_dir, name).read_text()))
        assert needle in text, (name, needle)


@pytest.mark.parametrize("name", ALL)
def test_component_ids_and_offsets_exact(request, subset, variant_dir, name):
    compare_offsets(request, f"{name}: stsb/3+edge", ORCHID_BIN, tokenizers, variant(variant_dir, name),
                    subset)


@pytest.mark.parametrize("name", sorted(SWEPT))
def test_component_every_codepoint_exact(request, variant_dir, name):
    check(request, f"{name}: code point sweep", variant(variant_dir, name), codepoint_sweep(), ensure_ascii=True)


def single_word_sweep():
    """Every scalar value right before and right after the single_word token "xq"."""
    cps = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    return [" ".join(f"{chr(c)}xq xq{chr(c)}" for c in cps[i:i + 64]) for i in range(0, len(cps), 64)]


def test_single_word_every_neighbour_exact(request, variant_dir):
    path = variant(variant_dir, "wordpiece-single-word")
    xq = reference_tokenizer(tokenizers, path).token_to_id("xq")
    assert xq is not None
    texts = single_word_sweep()
    check(request, "wordpiece-single-word: code point neighbours", path, texts, ensure_ascii=True)
    # The sweep must exercise both outcomes, or it proves nothing.
    ids = [i for e in reference_tokenizer(tokenizers, path).encode_batch(texts[:40]) for i in e.ids]
    assert ids.count(xq) > 100, ids.count(xq)


@pytest.mark.parametrize("name", TRIM)
def test_trim_offsets_changes_offsets(subset, variant_dir, name):
    """trim_offsets must matter on this corpus, or the offsets comparison above proves nothing."""
    trimmed = reference_tokenizer(tokenizers, variant(variant_dir, name)).encode_batch(subset)
    untrimmed = reference_tokenizer(tokenizers, make_components.QWEN3).encode_batch(subset,
                                                                                    add_special_tokens=False)
    changed = sum(1 for a, b in zip(trimmed, untrimmed)
                  if [o for o, s in zip(a.offsets, a.special_tokens_mask) if not s] != b.offsets)
    assert changed > len(subset) // 4, f"trim_offsets changed only {changed} of {len(subset)} texts"


def test_bpe_byte_fallback_beside_a_fused_unk_exact(request, subset, variant_dir):
    """A BPE with byte_fallback and fuse_unk where some characters have byte tokens and others
    fall to the unk (found by tokenizer_json_fuzz: offsets past the text's end). `tokenizers`
    emits a character's byte tokens before a pending fused unk, whose length counts only the
    unknown characters' bytes; offsets follow each other in that order."""
    path = variant_dir / "bpe-byte-fallback-fused-unk.json"
    path.write_text(json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
        "normalizer": {"type": "Prepend", "prepend": "斁"}, "pre_tokenizer": None,
        "post_processor": None, "decoder": None,
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                  "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": True,
                  "byte_fallback": True, "ignore_merges": False,
                  "vocab": {"<unk>": 0, "<0x41>": 1, "▁": 2, "h": 3, "e": 4, "he": 5, "K": 6,
                            "<0x4B>": 7},
                  "merges": [["h", "e"]]}}, ensure_ascii=False))
    texts = ["AK]", "xAK]", "hAeK]", "xyAhe", "A"] + subset[:300]
    compare_offsets(request, "bpe byte fallback beside a fused unk", ORCHID_BIN, tokenizers, path, texts)
