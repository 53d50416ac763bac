#!/usr/bin/env python3
"""BGE-M3's three outputs from one pass on the CPU: orchid against FlagEmbedding's
BGEM3FlagModel.encode(return_dense=True, return_sparse=True, return_colbert_vecs=True), same
machine, same run, same sentences (STS-B English, each once).

The model has BAAI/bge-m3's shapes (XLMRobertaModel, hidden 1024, 24 layers, 16 heads, FFN 4096,
vocabulary 250002, 8194 positions; colbert_linear 1024 x 1024, sparse_linear 1 x 1024) with
random weights (no hub here): transformers initialises it and saves it (model.safetensors), the
heads are torch.save'd state dicts as FlagEmbedding's save() writes them, and the tokenizer is
the XLM-R Unigram tokenizer of tests/fixtures/tokenizer (16002 pieces: the ids it gives are a
subset of BGE-M3's 250002). Sides, each timed --runs times, alternating:

  - FlagEmbedding encode: BGEM3FlagModel(use_fp16=False, devices="cpu").encode(sentences,
    batch_size=--flag-batch, return_dense, return_sparse, return_colbert_vecs), the model
    loaded beforehand. encode() first runs one probe pass of batch_size copies of the longest
    input (its batch-size search), then the sentences sorted by length in padded batches;
  - orchid serve: an `orchid serve` started beforehand, one POST /embed_multi with every
    sentence (the three outputs from one pass per batch), timed until the whole reply body is
    received (JSON parsing by the client is not timed).

Before timing, orchid's outputs are checked against FlagEmbedding's: dense and ColBERT vectors
cosine >= 0.99999, lexical weights within 1e-4 (the same ids above 1e-4). Medians over --runs.

  PYTHONPATH=/path/to/FlagEmbedding-overlay .venv-ref-new/bin/python \\
    bench/cpu/bge_m3_vs_flagembedding.py [--sentences 128] [--runs 5]

(FlagEmbedding 1.4.2 installed --no-deps; its fine-tuning imports stubbed as in
tests/fixtures/bge_m3/make_bge_m3.py). Writes bench/results/bge-m3-vs-flagembedding-*.{md,json}.
"""
import argparse
import csv
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine_vs_torch import SHARED, REPO, commit, machine  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "tests", "fixtures", "bge_m3"))
import make_bge_m3  # noqa: E402,F401  (stubs FlagEmbedding's fine-tuning imports)
import torch  # noqa: E402
from FlagEmbedding import BGEM3FlagModel  # noqa: E402

REAL = dict(model_type="xlm-roberta", vocab_size=250002, hidden_size=1024, num_hidden_layers=24,
            num_attention_heads=16, intermediate_size=4096, hidden_act="gelu",
            max_position_embeddings=8194, type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1,
            bos_token_id=0, eos_token_id=2, position_embedding_type="absolute",
            architectures=["XLMRobertaModel"])


def sentences(n):
    out, seen = [], set()
    for split in ("train", "dev", "test"):
        with open(os.path.join(SHARED, "stsb", f"stsb-en-{split}.csv"), newline="",
                  encoding="utf-8") as f:
            for row in csv.reader(f):
                for s in row[:2]:
                    if s not in seen:
                        seen.add(s)
                        out.append(s)
    return out[:n]


def build_model(d):
    from transformers import XLMRobertaConfig, XLMRobertaModel
    torch.manual_seed(0)
    model = XLMRobertaModel(XLMRobertaConfig(**REAL), add_pooling_layer=True).eval()
    model.save_pretrained(d, safe_serialization=True)
    H = REAL["hidden_size"]
    for name, rows in (("colbert_linear", H), ("sparse_linear", 1)):
        torch.save(torch.nn.Linear(H, rows).state_dict(), os.path.join(d, f"{name}.pt"))
    shutil.copyfile(os.path.join(REPO, "tests", "fixtures", "tokenizer", "unigram_xlmr",
                                 "tokenizer.json"), os.path.join(d, "tokenizer.json"))
    json.dump([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}],
              open(os.path.join(d, "modules.json"), "w"))
    os.makedirs(os.path.join(d, "1_Pooling"))
    os.makedirs(os.path.join(d, "2_Normalize"))
    json.dump({"word_embedding_dimension": H, "pooling_mode_cls_token": True,
               "pooling_mode_mean_tokens": False}, open(os.path.join(d, "1_Pooling", "config.json"), "w"))
    json.dump({"max_seq_length": 8192, "do_lower_case": False},
              open(os.path.join(d, "sentence_bert_config.json"), "w"))


def post(url, body):
    req = urllib.request.Request(url + "/embed_multi", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=3600) as r:
        return r.read()


def cos_min(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(((a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)).min())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sentences", type=int, default=128)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--flag-batch", type=int, default=32)
    ap.add_argument("--orchid", default=os.environ.get("ORCHID_BIN",
                                                       os.path.join(REPO, "build", "orchid")))
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    args = ap.parse_args()
    import FlagEmbedding
    import transformers

    load_before = os.getloadavg()
    texts = sentences(args.sentences)
    with tempfile.TemporaryDirectory(dir=os.path.join(REPO, "models")) as tmp:
        model_dir = os.path.join(tmp, "bge-m3-shape")
        os.makedirs(model_dir)
        build_model(model_dir)
        t0 = time.perf_counter()
        flag = BGEM3FlagModel(model_dir, use_fp16=False, devices="cpu")
        load_s = time.perf_counter() - t0

        def flag_run():
            t = time.perf_counter()
            out = flag.encode(texts, batch_size=args.flag_batch, return_dense=True,
                              return_sparse=True, return_colbert_vecs=True)
            return time.perf_counter() - t, out

        server = subprocess.Popen([args.orchid, "serve", "--model", model_dir, "--host",
                                   "127.0.0.1", "--port", "0"], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        try:
            url = None
            for line in server.stdout:
                m = re.search(r" on http://(\S+):(\d+)\s*$", line)
                if m:
                    url = f"http://127.0.0.1:{m.group(2)}"
                    break
            assert url, "orchid serve did not start"
            threading.Thread(target=lambda: [None for _ in server.stdout], daemon=True).start()

            def orchid_run():
                t = time.perf_counter()
                body = post(url, {"input": texts})
                return time.perf_counter() - t, body

            ref = flag_run()[1]
            got = json.loads(orchid_run()[1])["data"]
            fidelity = {
                "dense_min_cosine": cos_min([d["dense_vecs"] for d in got], ref["dense_vecs"]),
                "colbert_min_cosine": min(cos_min(d["colbert_vecs"], r)
                                          for d, r in zip(got, ref["colbert_vecs"])),
                "lexical_max_abs_diff": 0.0}
            for d, r in zip(got, ref["lexical_weights"]):
                mine = {int(k): v for k, v in d["lexical_weights"].items()}
                theirs = {int(k): float(v) for k, v in r.items()}
                assert {k for k, v in theirs.items() if v > 1e-4} <= set(mine) <= set(theirs)
                for k, v in mine.items():
                    fidelity["lexical_max_abs_diff"] = max(fidelity["lexical_max_abs_diff"],
                                                           abs(v - theirs[k]))
            assert fidelity["dense_min_cosine"] >= 0.99999, fidelity
            assert fidelity["colbert_min_cosine"] >= 0.99999, fidelity
            assert fidelity["lexical_max_abs_diff"] <= 1e-4, fidelity
            sides = {"FlagEmbedding encode": flag_run, "orchid serve /embed_multi": orchid_run}
            times = {name: [] for name in sides}
            for _ in range(args.runs):
                for name, run in sides.items():
                    times[name].append(run()[0])
        finally:
            server.terminate()
            server.wait(timeout=60)

    load_after = os.getloadavg()
    n = len(texts)
    tokens = sum(len(flag.tokenizer(t)["input_ids"]) for t in texts)
    med = {k: statistics.median(v) for k, v in times.items()}
    rate = {k: n / v for k, v in med.items()}
    stamp = datetime.datetime.now(datetime.timezone.utc)
    name = f"bge-m3-vs-flagembedding-{stamp:%Y%m%d-%H%M%S}"
    result = {"machine": machine(), "commit": commit(), "date": stamp.isoformat(timespec="seconds"),
              "sentences": n, "tokens": tokens, "runs": args.runs, "flag_batch": args.flag_batch,
              "flagembedding": FlagEmbedding.__version__ if hasattr(FlagEmbedding, "__version__")
              else "1.4.2", "torch": torch.__version__, "transformers": transformers.__version__,
              "torch_threads": torch.get_num_threads(), "flag_load_s": load_s,
              "loadavg_before_after": [load_before, load_after], "times_s": times,
              "median_s": med, "texts_per_s": rate, "fidelity": fidelity}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, name + ".json"), "w") as f:
        json.dump(result, f, indent=1)
    base = rate["FlagEmbedding encode"]
    lines = [
        "# BGE-M3 (dense + sparse + ColBERT from one pass): orchid vs FlagEmbedding", "",
        f"- machine: {result['machine']}, shared with other builds "
        f"(read medians and ratios); load average {load_before[0]:.2f} before, "
        f"{load_after[0]:.2f} after",
        f"- commit: {result['commit']}; date: {result['date']}",
        f"- {n} STS-B English sentences ({tokens} tokens with <s> and </s>); BAAI/bge-m3's shapes "
        "with random weights (XLM-R 1024 x 24, vocabulary 250002, colbert_linear 1024 x 1024, "
        "sparse_linear 1 x 1024), fp32",
        f"- FlagEmbedding {result['flagembedding']} on PyTorch {torch.__version__} "
        f"({torch.get_num_threads()} threads), transformers {transformers.__version__}: "
        f"`encode(batch_size={args.flag_batch}, return_dense, return_sparse, "
        "return_colbert_vecs)` on a loaded model (it includes its batch-size probe pass); orchid "
        "serve: one POST /embed_multi with every sentence, all cores, timed to the last byte of "
        "the reply",
        "- fidelity before timing: dense min cosine {dense_min_cosine:.7f}, ColBERT min cosine "
        "{colbert_min_cosine:.7f}, lexical weights max abs diff {lexical_max_abs_diff:.2e}"
        .format(**fidelity),
        f"- made by `bench/cpu/bge_m3_vs_flagembedding.py --sentences {n} --runs {args.runs} "
        f"--flag-batch {args.flag_batch}`", "",
        "| side | runs (s) | median s | texts/s | vs FlagEmbedding |", "|---|---|---|---|---|"]
    for k in sides:
        lines.append(f"| {k} | {', '.join(f'{t:.2f}' for t in times[k])} | {med[k]:.2f} | "
                     f"{rate[k]:.2f} | {rate[k] / base:.2f}x |")
    with open(os.path.join(args.out, name + ".md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
