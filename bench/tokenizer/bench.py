#!/usr/bin/env python3
"""Tokenizer benchmark (issue 3): orchid vs Hugging Face `tokenizers` vs SentencePiece.

For each tokenizer — WordPiece (all-MiniLM-L6-v2), byte-level BPE (Qwen3), BPE with byte
fallback (Gemma3), Unigram (tests/fixtures/tokenizer/unigram_xlmr) — in one run:
  * single-threaded p50 / p99 latency per input for inputs of about 32, 514 and 8,192 tokens
    (English STS-B text concatenated and cut at token boundaries, counted by the tokenizer
    itself, special tokens included);
  * aggregate tokens/s over the whole STS-B corpus (11 languages, all splits, both columns).
Peers: `tokenizers` per call (`encode`) and batched (`encode_batch`, one thread), and for
Unigram SentencePiece's C++ library through the `sentencepiece` package (`encode`, ids). orchid
is timed in-process by build/orchid_tokenizer_bench (Tokenizer::Encode, no JSON I/O); the peers
are timed from Python, so their numbers include the binding's per-call overhead, which is how
applications call them. Writes bench/results/tokenizer-<date>.md, the same numbers as .json, and
a chart of them as .png (bench/plots.py).
"""
import argparse
import csv
import datetime
import glob
import json
import os
import platform
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

# One thread for the peers, set before `tokenizers` is imported.
os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

from tokenizers import Tokenizer  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from plots import plot_after_run  # noqa: E402
STSB = REPO / "tests" / "data" / "stsb"
TOKENIZERS = [
    ("WordPiece (all-MiniLM-L6-v2)", REPO / "models/all-MiniLM-L6-v2/tokenizer.json"),
    ("Byte-level BPE (Qwen3)", REPO / "tests/data/tokenizers/qwen3/tokenizer.json"),
    ("BPE + byte fallback (Gemma3)", REPO / "tests/data/tokenizers/gemma3/tokenizer.json"),
    ("Unigram (unigram_xlmr)", REPO / "tests/fixtures/tokenizer/unigram_xlmr/tokenizer.json"),
]
SIZES = [(32, 500), (514, 200), (8192, 16)]  # (target tokens, number of inputs)


def stsb_rows(pattern):
    texts = []
    for f in sorted(glob.glob(str(STSB / pattern))):
        with open(f, newline="", encoding="utf-8") as fh:
            for row in csv.reader(fh):
                texts.extend(row[:2])
    return texts


def cut_inputs(tok, text, target, count):
    """COUNT consecutive pieces of TEXT of about TARGET tokens each (specials included)."""
    specials = tok.num_special_tokens_to_add(False)
    per = max(1, target - specials)
    enc = tok.encode(text, add_special_tokens=False)
    offs = enc.offsets
    out = []
    for i in range(count):
        a, b = i * per, (i + 1) * per - 1
        if b >= len(offs):
            break
        out.append(text[offs[a][0]:offs[b][1]].strip())
    return out


def write_inputs(path, texts):
    with open(path, "wb") as fh:
        for t in texts:
            b = t.encode("utf-8")
            fh.write(struct.pack("<I", len(b)))
            fh.write(b)


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def time_per_call(encode, texts, reps):
    for t in texts:  # warm-up
        encode(t)
    us = []
    clock = time.perf_counter_ns
    for _ in range(reps):
        for t in texts:
            t0 = clock()
            encode(t)
            us.append((clock() - t0) / 1e3)
    return {"p50_us": pct(us, 0.5), "p99_us": pct(us, 0.99), "mean_us": statistics.fmean(us)}


def hf_stats(tok, texts, reps):
    s = time_per_call(tok.encode, texts, reps)
    tokens = sum(len(e.ids) for e in tok.encode_batch(texts))
    s["tokens"] = tokens
    s["tokens_per_s"] = tokens / (s["mean_us"] * len(texts) / 1e6)
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        tok.encode_batch(texts)
        best = min(best, time.perf_counter() - t0)
    s["batch_mean_us"] = best / len(texts) * 1e6
    s["batch_tokens_per_s"] = tokens / best
    return s


def spm_stats(sp, texts, reps):
    s = time_per_call(sp.encode, texts, reps)
    tokens = sum(len(ids) + 2 for ids in sp.encode(texts))  # + <s> … </s>, as the template adds
    s["tokens"] = tokens
    s["tokens_per_s"] = tokens / (s["mean_us"] * len(texts) / 1e6)
    return s


def unigram_spm_model(cache):
    """The SentencePiece model behind unigram_xlmr, retrained by make_unigram.py's recipe
    (make_unigram.py keeps only tokenizer.json); training is deterministic (one thread)."""
    model = cache / "unigram_xlmr.model"
    if model.exists():
        return model
    import sentencepiece as spm
    sys.path.insert(0, str(REPO / "tests/fixtures/tokenizer"))
    import make_unigram
    corpus = cache / "unigram_corpus.txt"
    corpus.write_text("\n".join(make_unigram.training_text()) + "\n", encoding="utf-8")
    print("bench: training the Unigram SentencePiece model (make_unigram.py's settings)", file=sys.stderr)
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(cache / "unigram_xlmr"), model_type="unigram",
        vocab_size=make_unigram.VOCAB_SIZE, normalization_rule_name="nmt_nfkc",
        character_coverage=0.9995, num_threads=1, seed_sentencepiece_size=200000,
        shuffle_input_sentence=False, input_sentence_size=0, minloglevel=2)
    corpus.unlink()
    return model


def machine():
    cpu = platform.processor()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return cpu, os.cpu_count()


def git(*args):
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()


LOAD_AT_START = os.getloadavg()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench-bin", default=str(REPO / "build/orchid_tokenizer_bench"))
    ap.add_argument("--work", default=str(REPO / "build/bench-tokenizer"))
    ap.add_argument("--reps", type=int, default=3, help="timed passes for the peers")
    ap.add_argument("--orchid-reps", type=int, default=10, help="timed passes for orchid")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)

    english = " ".join(stsb_rows("stsb-en-*.csv"))
    corpus = stsb_rows("stsb-*.csv")
    results = []
    for name, path in TOKENIZERS:
        print(f"bench: {name}", file=sys.stderr)
        tok = Tokenizer.from_file(str(path))
        tok.no_truncation()
        tok.no_padding()
        sets = [(f"{n} tokens", cut_inputs(tok, english, n, count)) for n, count in SIZES]
        sets.append(("STS-B corpus", corpus))
        files = []
        for i, (_, texts) in enumerate(sets):
            f = work / f"{path.parent.name}-{i}.bin"
            write_inputs(f, texts)
            files.append(str(f))
        proc = subprocess.run([args.bench_bin, str(path), str(args.orchid_reps), *files[:3]],
                              capture_output=True, text=True, check=True)
        orchid = [json.loads(line) for line in proc.stdout.splitlines()]
        proc = subprocess.run([args.bench_bin, str(path), "1", files[3]], capture_output=True,
                              text=True, check=True)
        orchid += [json.loads(line) for line in proc.stdout.splitlines()]

        sp = None
        if path.parent.name == "unigram_xlmr":
            import sentencepiece as spm
            sp = spm.SentencePieceProcessor(model_file=str(unigram_spm_model(work)))
            # Same model? Compare pieces on the corpus (the converter maps ▁ and ids 1:1).
            sample = corpus[::50]
            same = sum(sp.encode(t, out_type=str) == tok.encode(t, add_special_tokens=False).tokens
                       for t in sample)
            spm_agree = f"{same}/{len(sample)}"
        for (label, texts), o in zip(sets, orchid):
            reps = 1 if label == "STS-B corpus" else args.reps
            hf = hf_stats(tok, texts, reps)
            row = {"tokenizer": name, "set": label, "inputs": len(texts), "orchid": o, "hf": hf}
            if sp is not None:
                row["spm"] = spm_stats(sp, texts, reps)
                row["spm_agree"] = spm_agree
            if o["tokens"] != hf["tokens"]:
                row["token_mismatch"] = (o["tokens"], hf["tokens"])
            results.append(row)
            print(f"  {label}: orchid p50 {o['p50_us']:.1f} us, tokenizers p50 {hf['p50_us']:.1f} us",
                  file=sys.stderr)
    (work / "results.json").write_text(json.dumps(results, indent=1))
    write_markdown(results, args.out)


def write_markdown(results, out):
    import importlib.metadata as md
    cpu, cores = machine()
    date = datetime.datetime.now(datetime.timezone.utc)
    commit = git("rev-parse", "--short", "HEAD")
    if git("status", "--porcelain", "--", "src/tokenizer", "bench/tokenizer"):
        commit += " + uncommitted changes in src/tokenizer or bench/tokenizer"
    try:
        spm_version = md.version("sentencepiece")
    except md.PackageNotFoundError:
        spm_version = "n/a"
    L = [f"# Tokenizer benchmark — {date:%Y-%m-%d}", "",
         f"- Machine: {cpu}, {cores} logical cores (`nproc`), {platform.system()} {platform.release()}",
         f"- Commit: {commit}; date {date:%Y-%m-%d %H:%M} UTC",
         f"- Peers: tokenizers {md.version('tokenizers')} (Rust core via Python, RAYON_NUM_THREADS=1, "
         f"TOKENIZERS_PARALLELISM=false), sentencepiece {spm_version} (C++ library via Python)",
         "- Single thread throughout. orchid: `Tokenizer::Encode` timed in-process "
         "(build/orchid_tokenizer_bench), one reused `Encoding`. Peers timed per call from Python "
         "(`encode`), so their numbers include the binding's per-call cost; `encode_batch` shows "
         "the Rust core with that cost amortised.",
         "- Inputs: English STS-B text concatenated and cut at the tokenizer's own token boundaries "
         "(special tokens included in the count); corpus = all STS-B files, 11 languages, both "
         "columns. Latency = per call, over all inputs x passes.",
         "- Caches: orchid (per-thread WordCache) and `tokenizers` (its BPE / Unigram word cache) "
         "memoise short words; every input set is encoded once untimed first and then several "
         "times, so both run warm. SentencePiece has no such cache.",
         f"- Load average when the run started: {LOAD_AT_START[0]:.2f} (the machine may be shared; "
         "single runs move by tens of percent).",
         "- Command: `make bench-tokenizer` (bench/tokenizer/run.sh)", "",
         "| Tokenizer | Input | n | orchid p50 µs | orchid p99 µs | tokenizers p50 µs | tokenizers p99 µs "
         "| tokenizers batch µs/input | SentencePiece p50 µs | SentencePiece p99 µs | orchid ÷ tokenizers p50 (speed-up) "
         "| orchid ÷ SentencePiece p50 (speed-up) |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    f = lambda x: f"{x:,.1f}"
    for r in results:
        if r["set"] == "STS-B corpus":
            continue
        o, hf, sp = r["orchid"], r["hf"], r.get("spm")
        L.append(f"| {r['tokenizer']} | {r['set']} | {r['inputs']} | {f(o['p50_us'])} | {f(o['p99_us'])} | "
                 f"{f(hf['p50_us'])} | {f(hf['p99_us'])} | {f(hf['batch_mean_us'])} | "
                 f"{f(sp['p50_us']) if sp else '—'} | {f(sp['p99_us']) if sp else '—'} | "
                 f"**{hf['p50_us'] / o['p50_us']:.1f}×** | "
                 f"{'**%.1f×**' % (sp['p50_us'] / o['p50_us']) if sp else '—'} |")
    L += ["", "Aggregate throughput over the STS-B corpus (tokens/s, special tokens included):", "",
          "| Tokenizer | texts | tokens | orchid | tokenizers per call | tokenizers encode_batch "
          "| SentencePiece | orchid ÷ tokenizers (per call) | orchid ÷ tokenizers (batch) | orchid ÷ SentencePiece |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    g = lambda x: f"{x / 1e6:,.2f} M"
    for r in results:
        if r["set"] != "STS-B corpus":
            continue
        o, hf, sp = r["orchid"], r["hf"], r.get("spm")
        L.append(f"| {r['tokenizer']} | {r['inputs']:,} | {o['tokens']:,} | {g(o['tokens_per_s'])} | "
                 f"{g(hf['tokens_per_s'])} | {g(hf['batch_tokens_per_s'])} | "
                 f"{g(sp['tokens_per_s']) if sp else '—'} | {o['tokens_per_s'] / hf['tokens_per_s']:.1f}× | "
                 f"{o['tokens_per_s'] / hf['batch_tokens_per_s']:.1f}× | "
                 f"{'%.1f×' % (o['tokens_per_s'] / sp['tokens_per_s']) if sp else '—'} |")
    L += ["", "Targets (issue 3): ≥ 5× `tokenizers` p50 on the 514-token inputs for every model type; "
          "≥ 2× SentencePiece for Unigram.", ""]
    for r in results:
        if r["set"] == "514 tokens":
            x = r["hf"]["p50_us"] / r["orchid"]["p50_us"]
            L.append(f"- {r['tokenizer']}: {x:.1f}× vs tokenizers — {'met' if x >= 5 else 'MISSED'}")
            if r.get("spm"):
                y = r["spm"]["p50_us"] / r["orchid"]["p50_us"]
                L.append(f"- {r['tokenizer']}: {y:.1f}× vs SentencePiece — {'met' if y >= 2 else 'MISSED'} "
                         f"(SentencePiece model retrained by make_unigram.py's recipe; its pieces equal "
                         f"tokenizer.json's on {r['spm_agree']} sampled corpus lines)")
    mism = [r for r in results if "token_mismatch" in r]
    L.append("")
    L.append("Token totals per input set equal `tokenizers`' for every row." if not mism else
             "Token totals differing from `tokenizers`: " +
             "; ".join(f"{r['tokenizer']} {r['set']}: {r['token_mismatch']}" for r in mism))
    text = "\n".join(L) + "\n"
    out = Path(out) if out else REPO / "bench/results" / f"tokenizer-{date:%Y-%m-%d}.md"
    out.write_text(text)
    out.with_suffix(".json").write_text(json.dumps({
        "machine": f"{cpu}, {cores} logical cores, {platform.system()} {platform.release()}",
        "commit": commit, "date": f"{date:%Y-%m-%d %H:%M} UTC", "load_at_start": LOAD_AT_START[0],
        "tokenizers_version": md.version("tokenizers"), "sentencepiece_version": spm_version,
        "results": results}, indent=1) + "\n")
    print(text)
    print(f"bench: wrote {out} and .json", file=sys.stderr)
    plot_after_run(out.with_suffix(".json"))


if __name__ == "__main__":
    main()
