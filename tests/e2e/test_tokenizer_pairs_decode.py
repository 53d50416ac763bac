"""Pair inputs (`orchid tokenize --pair --type-ids`) must give exactly the ids and token_type_ids
of Hugging Face `tokenizers`' encode_batch of pairs: WordPiece (all-MiniLM-L6-v2) and the Unigram
fixture, on every 13th STS-B row (both columns of a row as a pair), without truncation, without
special tokens, and with max_length 16 / 32 under each truncation strategy (longest_first,
only_first, only_second; right side, plus left for longest_first). Pairs the reference rejects
(only_first / only_second when that sequence is too short) are checked to be rejected by orchid
too (exit status 1).

Decoding (`orchid tokenize --decode [--skip-special-tokens]`) must give exactly `tokenizers`'
decode_batch, both ways of skip_special_tokens, for WordPiece, the Unigram fixture, Qwen3
(ByteLevel) and Gemma3 (Replace + ByteFallback + Fuse): see test_decode_exact.

Env: ORCHID_BIN (default build/orchid).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "fixtures" / "tokenizer"))
from compare import TOKENIZERS_DIR, compare, stsb_pairs, stsb_sentences  # noqa: E402
from edge_cases import edge_cases  # noqa: E402

import tokenizers  # noqa: E402  (a hard dependency: a missing reference must fail, not skip)

ORCHID_BIN = Path(os.environ.get("ORCHID_BIN", REPO / "build" / "orchid"))
TOKENIZERS = {
    "wordpiece": REPO / "models" / "all-MiniLM-L6-v2" / "tokenizer.json",
    "unigram": REPO / "tests" / "fixtures" / "tokenizer" / "unigram_xlmr" / "tokenizer.json",
}
EVERY = 13


@pytest.fixture(scope="module")
def pairs():
    assert ORCHID_BIN.exists(), f"no orchid binary at {ORCHID_BIN} (set ORCHID_BIN)"
    return stsb_pairs(EVERY)


def run_pairs(path, pairs, *args):
    if "--max-length" not in args:  # the reference runs without tokenizer.json's truncation
        args = (*args, "--no-truncation")
    payload = "".join(json.dumps(list(p), ensure_ascii=False) + "\n" for p in pairs)
    return subprocess.run([str(ORCHID_BIN), "tokenize", "--tokenizer", str(path), "--pair", "--type-ids", *args],
                          input=payload.encode("utf-8"), capture_output=True, timeout=600)


def check_pairs(request, name, path, pairs, *args, truncation=None, add_special_tokens=True):
    ref_tok = tokenizers.Tokenizer.from_file(str(path))
    ref_tok.no_padding()
    ref_tok.no_truncation()
    if truncation is not None:
        max_length, strategy, side = truncation
        ref_tok.enable_truncation(max_length, strategy=strategy, direction=side)
    ok, ref, rejected = [], [], []
    if truncation is None or truncation[1] == "longest_first":
        ok = list(pairs)
        ref = ref_tok.encode_batch(ok, add_special_tokens=add_special_tokens)
    else:  # the reference raises for a pair it cannot truncate so: encode one by one
        for p in pairs:
            try:
                ref.append(ref_tok.encode(p[0], p[1], add_special_tokens=add_special_tokens))
                ok.append(p)
            except Exception:  # noqa: BLE001  (tokenizers raises a plain Exception)
                rejected.append(p)
    proc = run_pairs(path, ok, *args)
    assert proc.returncode == 0, f"orchid tokenize failed ({proc.returncode}): {proc.stderr.decode()[:2000]}"
    lines = proc.stdout.decode().splitlines()
    assert len(lines) == len(ok), f"{len(ok)} inputs but {len(lines)} output lines"
    ours = [json.loads(line) for line in lines]
    texts = [f"{a} ||| {b}" for a, b in ok]
    compare(request, name, texts, [[o["ids"], o["type_ids"]] for o in ours],
            [[e.ids, e.type_ids] for e in ref], None, tokenizers.__version__)
    for p in rejected[:5]:
        proc = run_pairs(path, [p], *args)
        assert proc.returncode == 1 and b"too short" in proc.stderr, \
            f"[{name}] the reference rejects {p!r} but orchid gave {proc.returncode}: {proc.stdout[:200]!r}"
    return len(ok), len(rejected)


@pytest.mark.parametrize("kind", sorted(TOKENIZERS))
def test_pairs_exact(request, pairs, kind):
    check_pairs(request, f"{kind} pairs: stsb/{EVERY}", TOKENIZERS[kind], pairs)


@pytest.mark.parametrize("kind", sorted(TOKENIZERS))
def test_pairs_without_special_tokens_exact(request, pairs, kind):
    check_pairs(request, f"{kind} pairs: stsb/{EVERY}, no special tokens", TOKENIZERS[kind], pairs,
                "--no-special-tokens", add_special_tokens=False)


@pytest.mark.parametrize("kind", sorted(TOKENIZERS))
@pytest.mark.parametrize("max_length,strategy,side", [
    (16, "longest_first", "right"), (32, "longest_first", "right"), (16, "longest_first", "left"),
    (16, "only_first", "right"), (32, "only_first", "right"),
    (16, "only_second", "right"), (32, "only_second", "left"),
])
def test_pairs_truncation_exact(request, pairs, kind, max_length, strategy, side):
    check_pairs(request, f"{kind} pairs: stsb/{EVERY}, max_length={max_length} {strategy} {side}",
                TOKENIZERS[kind], pairs, "--max-length", str(max_length), "--truncation-strategy", strategy,
                "--truncation-side", side, truncation=(max_length, strategy, side))


# --- decoding -------------------------------------------------------------------------------------

DECODE_TOKENIZERS = {
    "wordpiece": TOKENIZERS["wordpiece"],
    "unigram": TOKENIZERS["unigram"],
    "qwen3": TOKENIZERS_DIR / "qwen3" / "tokenizer.json",
    "gemma3": TOKENIZERS_DIR / "gemma3" / "tokenizer.json",
}
DECODE_EVERY = 17


@pytest.mark.parametrize("skip_special_tokens", [False, True])
@pytest.mark.parametrize("kind", sorted(DECODE_TOKENIZERS))
def test_decode_exact(request, kind, skip_special_tokens):
    """`orchid tokenize --decode` vs decode_batch on the reference's encodings of every 17th STS-B
    sentence (with special tokens) plus the edge cases."""
    assert ORCHID_BIN.exists(), f"no orchid binary at {ORCHID_BIN} (set ORCHID_BIN)"
    path = DECODE_TOKENIZERS[kind]
    ref_tok = tokenizers.Tokenizer.from_file(str(path))
    ref_tok.no_padding()
    ref_tok.no_truncation()
    texts = stsb_sentences()[::DECODE_EVERY] + edge_cases()
    ids = [e.ids for e in ref_tok.encode_batch(texts)]
    ref = ref_tok.decode_batch(ids, skip_special_tokens=skip_special_tokens)
    args = ["--decode"] + (["--skip-special-tokens"] if skip_special_tokens else [])
    payload = "".join(json.dumps(x) + "\n" for x in ids)
    proc = subprocess.run([str(ORCHID_BIN), "tokenize", "--tokenizer", str(path), *args],
                          input=payload.encode("utf-8"), capture_output=True, timeout=600)
    assert proc.returncode == 0, f"orchid tokenize --decode failed ({proc.returncode}): {proc.stderr.decode()[:2000]}"
    lines = proc.stdout.decode("utf-8").split("\n")[:-1]  # not splitlines(): U+2028, U+0085 are raw
    assert len(lines) == len(ids), f"{len(ids)} inputs but {len(lines)} output lines"
    ours = [json.loads(line) for line in lines]
    compare(request, f"{kind} decode: stsb/{DECODE_EVERY}+edge, skip_special_tokens={skip_special_tokens}",
            texts, [[o] for o in ours], [[r] for r in ref], None, tokenizers.__version__)


@pytest.mark.parametrize("kind", sorted(DECODE_TOKENIZERS))
def test_decode_random_ids_exact(request, kind):
    """Random id sequences (seeded; any vocabulary id, special ones included): partial UTF-8 from
    byte-level / byte-fallback pieces, ## pieces first, special tokens anywhere."""
    import random
    path = DECODE_TOKENIZERS[kind]
    ref_tok = tokenizers.Tokenizer.from_file(str(path))
    rng = random.Random(3)
    n = ref_tok.get_vocab_size(with_added_tokens=True)
    ids = [[rng.randrange(n) for _ in range(rng.randrange(0, 12))] for _ in range(3000)]
    for skip in (False, True):
        ref = ref_tok.decode_batch(ids, skip_special_tokens=skip)
        args = ["--decode"] + (["--skip-special-tokens"] if skip else [])
        payload = "".join(json.dumps(x) + "\n" for x in ids)
        proc = subprocess.run([str(ORCHID_BIN), "tokenize", "--tokenizer", str(path), *args],
                              input=payload.encode("utf-8"), capture_output=True, timeout=600)
        assert proc.returncode == 0, f"orchid tokenize --decode failed: {proc.stderr.decode()[:2000]}"
        ours = [json.loads(line) for line in proc.stdout.decode("utf-8").split("\n")[:-1]]
        compare(request, f"{kind} decode: random ids, skip_special_tokens={skip}", [str(x) for x in ids],
                [[o] for o in ours], [[r] for r in ref], None, tokenizers.__version__)
