#!/usr/bin/env python3
"""ColBERT (late interaction): orchid against PyLate on PyTorch, same machine, same run, same
threads (issue 32). Two suites, and a cross-encoder row for the trade-off:

  encode  per-token encoding of --batch documents of ~180 tokens (answerai-colbert's
          document_length). orchid: the engine alone (orchid_engine_bench --per-token:
          transformer + projection on the token ids PyLate's tokenize() gives, no HTTP, no
          tokenizer). PyLate: the same ids, padded as PyLate pads them, through its module stack
          (Transformer + Dense) under torch.inference_mode() -- the same work -- and, beside it,
          ColBERT.encode(texts, is_query=False), what a PyLate user calls (tokenizing,
          normalising and the skiplist included).
  rerank  one query against --docs documents of ~180 tokens, the whole request. orchid:
          `orchid serve`'s POST /rerank over HTTP (JSON, tokenization, query expansion, the
          engine, MaxSim, the reply). PyLate: encode(query, is_query=True), encode(documents,
          is_query=False) and pylate.rank.rerank, in this process (no HTTP: in PyLate's favour).
          The cross-encoder: the same /rerank through `orchid serve` of a BERT cross-encoder of
          the ColBERT's size (each (query, document) pair one sequence).

The models have real shapes and random weights (no hub here; speed does not depend on the
weights): a BERT of answerai-colbert-small-v1's shape (384 wide, 12 layers, 12 heads, FFN 1536,
33M parameters) made a ColBERT by PyLate itself (projection 96, query_length 32,
document_length 180) and saved by it, as tests/fixtures/colbert/compare_real_shape.py does;
and BertForSequenceClassification of the same shape (one label) saved by transformers. The
tokenizer is all-MiniLM-L6-v2's (BERT uncased WordPiece).

Text: STS-B English train sentences (tests/data/stsb; the tests use the test and dev
splits), consecutive sentences joined into passages of ~180 tokens; queries are single
sentences from the end of the file.

Before timing, orchid must agree with PyLate: the engine's token vectors (cosine >= 0.9999 per
token) and /rerank's scores (MaxSim of PyLate's vectors, pair by pair, within 1e-4 relative).
Single timed runs of the sides alternate, round after round (the machine's drift lands on all
of them); medians and ratios are reported, with the load averages before and after.

PyTorch and PyLate as for tests/fixtures/colbert/make_colbert.py: PyLate 1.6.0 and
sentence-transformers 5.3.0 in an overlay directory in front of .venv-ref-new (transformers
5.25.0, torch 2.15):

  PYTHONPATH=<pylate 1.6.0 + sentence-transformers 5.3.0 + datasets, ujson> \\
    .venv-ref-new/bin/python bench/cpu/colbert_vs_pylate.py [--threads 2] [--rounds 7]

Writes bench/results/colbert-pylate-YYYYMMDD-HHMMSS.{md,json,png}.
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
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine_vs_torch import REPO, SHARED, commit, machine  # noqa: E402

MINILM = Path(REPO) / "models" / "all-MiniLM-L6-v2"
SHAPE = dict(vocab_size=30522, hidden_size=384, num_hidden_layers=12, num_attention_heads=12,
             intermediate_size=1536)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def copy_tokenizer(dst):
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copyfile(MINILM / f, dst / f)


def build_models(work):
    """The ColBERT (saved by PyLate) and the cross-encoder (saved by transformers), once."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertModel
    colbert, cross = work / "colbert-small-shape", work / "cross-encoder-small-shape"
    if not (colbert / "modules.json").exists():
        from pylate import models
        torch.manual_seed(0)
        base = work / "bert-small-shape"
        BertModel(BertConfig(**SHAPE)).save_pretrained(base)
        copy_tokenizer(base)
        models.ColBERT(model_name_or_path=str(base), embedding_size=96, device="cpu",
                       query_length=32, document_length=180).save(str(colbert))
    if not (cross / "config.json").exists():
        torch.manual_seed(1)
        BertForSequenceClassification(BertConfig(**SHAPE, num_labels=1)).save_pretrained(cross)
        copy_tokenizer(cross)
    return colbert, cross


def texts(tokenizer, n_docs, n_queries, doc_tokens=178):
    """Passages of ~doc_tokens tokens (consecutive STS-B train sentences) and single-sentence
    queries from the end of the file."""
    sentences = []
    with open(os.path.join(SHARED, "stsb", "stsb-en-train.csv"), newline="", encoding="utf-8") as f:
        for row in csv.reader(f):
            sentences.extend(s.strip() for s in row[:2] if s.strip())
    docs, cur, cur_len, i = [], [], 0, 0
    while len(docs) < n_docs:
        s = sentences[i]
        i += 1
        n = len(tokenizer.encode(s, add_special_tokens=False))
        if cur and cur_len + n > doc_tokens:
            docs.append(" ".join(cur))
            cur, cur_len = [], 0
        cur.append(s)
        cur_len += n
    queries = sentences[-n_queries:]
    return docs, queries


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


class Serve:
    """`orchid serve` of one model on a free port."""

    def __init__(self, orchid, model, threads, dtype):
        # int8: the start-up check's numbers are logged and reported here, not enforced.
        extra = ["--int8-serve-anyway", "--int8-cache", "off"] if dtype == "int8" else []
        self.p = subprocess.Popen([orchid, "serve", "--model", str(model), "--host", "127.0.0.1",
                                   "--port", "0", "--threads", str(threads), "--dtype", dtype,
                                   *extra],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = []
        for line in self.p.stdout:
            self.lines.append(line)
            m = re.search(r" on http://(\S+):(\d+)\s*$", line)
            if m:
                self.url = f"http://127.0.0.1:{m.group(2)}"
                break
        else:
            raise SystemExit(f"orchid serve {model} did not start:\n{''.join(self.lines)}")
        self.startup = [l.strip() for l in self.lines if "int8" in l or " on http://" in l]
        # Keep reading its log, so that a full pipe never stalls the server.
        threading.Thread(target=lambda: [None for _ in self.p.stdout], daemon=True).start()

    def stop(self):
        self.p.terminate()
        self.p.wait(timeout=60)


class EngineBench:
    """orchid_engine_bench --interactive --per-token: one timed run per case name written."""

    def __init__(self, binary, model, cases_path, threads, dtype):
        self.p = subprocess.Popen([binary, "--model", str(model), "--ids", cases_path, "--threads",
                                   str(threads), "--dtype", dtype, "--per-token", "--interactive",
                                   "--warmup", "2"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def run(self, name):
        self.p.stdin.write(name + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise SystemExit("orchid_engine_bench ended early")
        return json.loads(line)

    def stop(self):
        self.p.stdin.close()
        self.p.wait(timeout=60)


def cosines(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def summary(seconds):
    return {"runs": len(seconds), "median_s": statistics.median(seconds), "min_s": min(seconds),
            "max_s": max(seconds), "all_s": seconds}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2, help="engine / torch threads, both sides")
    ap.add_argument("--rounds", type=int, default=7, help="timed runs per side and suite")
    ap.add_argument("--batch", type=int, default=32, help="documents per encode run (PyLate's "
                    "default batch_size)")
    ap.add_argument("--docs", type=int, default=100, help="documents per /rerank query")
    ap.add_argument("--dtypes", default="float32,bfloat16,int8",
                    help="orchid's --dtype rows (PyLate runs float32, its default)")
    ap.add_argument("--work", default="/tmp/colbert-bench", help="where the models are built")
    ap.add_argument("--orchid", default=os.environ.get("ORCHID_BIN", os.path.join(REPO, "build", "orchid")))
    ap.add_argument("--engine-bench", default=os.path.join(REPO, "build", "orchid_engine_bench"))
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    ap.add_argument("--replot", metavar="RESULT.json", help="only redraw the PNG of a result")
    args = ap.parse_args()
    if args.replot:
        base = str(Path(args.replot).with_suffix(""))
        print(draw(base, json.loads(Path(args.replot).read_text())))
        return

    import torch
    from pylate import models, rank, scores
    torch.set_num_threads(args.threads)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    load_before = loadavg()
    colbert_dir, cross_dir = build_models(work)
    m = models.ColBERT(model_name_or_path=str(colbert_dir), device="cpu")
    m.eval()
    docs, queries = texts(m.tokenizer, max(args.docs, args.batch), args.rounds + 1)
    rerank_docs = docs[:args.docs]
    batch_docs = docs[:args.batch]

    # --- encode: the same token ids on both sides ------------------------------------------------
    features = m.tokenize(batch_docs, is_query=False)
    mask = features["attention_mask"].bool()
    seqs = [row[mk].tolist() for row, mk in zip(features["input_ids"], mask)]
    doc_lengths = [len(s) for s in seqs]
    log(f"encode: {len(seqs)} documents, {min(doc_lengths)}..{max(doc_lengths)} tokens "
        f"(mean {statistics.mean(doc_lengths):.0f}); rerank: {len(rerank_docs)} documents")

    def pylate_forward():
        with torch.inference_mode():
            return m.forward(input=dict(features))["token_embeddings"]

    def pylate_encode():
        return m.encode(batch_docs, is_query=False, batch_size=args.batch)

    dtypes = args.dtypes.split(",")
    tmp = tempfile.mkdtemp()
    cases = os.path.join(tmp, "cases.jsonl")
    with open(cases, "w") as f:
        f.write(json.dumps({"name": "docs", "seqs": seqs}) + "\n")
    ref = pylate_forward()[0][: doc_lengths[0]].numpy()
    engines, enc_cos = {}, {}
    for dt in dtypes:
        engines[dt] = EngineBench(args.engine_bench, colbert_dir, cases, args.threads, dt)
        first = engines[dt].run("docs")
        enc_cos[dt] = float(cosines(first["first_embedding"], ref).min())
        log(f"encode fidelity, orchid {dt}: min cosine per token {enc_cos[dt]:.7f}")
    if enc_cos.get("float32", 1.0) < 0.9999:
        raise SystemExit(f"orchid's float32 token vectors differ from PyLate's ({enc_cos})")
    pylate_forward()
    pylate_encode()  # warm-up
    enc = {f"orchid engine {dt}": [] for dt in dtypes}
    enc.update({"PyLate forward": [], "PyLate encode()": []})
    for r in range(args.rounds):
        names = list(enc)
        order = names[r % len(names):] + names[:r % len(names)]
        for side in order:
            if side.startswith("orchid engine "):
                enc[side].append(engines[side.rsplit(" ", 1)[1]].run("docs")["ms"] / 1000)
            else:
                fn = pylate_forward if side == "PyLate forward" else pylate_encode
                t0 = time.perf_counter()
                fn()
                enc[side].append(time.perf_counter() - t0)
        log(f"encode round {r + 1}: " + ", ".join(f"{k} {v[-1]:.3f}s" for k, v in enc.items()))
    for e in engines.values():
        e.stop()

    # --- rerank: one query, 100 documents ---------------------------------------------------------
    def pylate_rerank(query):
        q = m.encode([query], is_query=True)
        d = m.encode(rerank_docs, is_query=False)
        return rank.rerank(documents_ids=[list(range(len(rerank_docs)))], queries_embeddings=q,
                           documents_embeddings=[d]), q, d

    servers = {}
    try:
        for dt in dtypes:
            servers[("ColBERT", dt)] = Serve(args.orchid, colbert_dir, args.threads, dt)
            servers[("cross-encoder", dt)] = Serve(args.orchid, cross_dir, args.threads, dt)
        # Fidelity: orchid's MaxSim against PyLate's vectors, pair by pair, and the order.
        _, q, d = pylate_rerank(queries[0])
        want = np.array([float(scores.colbert_scores(torch.tensor(q[0])[None],
                                                     torch.tensor(x)[None])[0, 0]) for x in d])
        rel, top10 = {}, {}
        for dt in dtypes:
            got = np.zeros(len(rerank_docs))
            for r in post(servers[("ColBERT", dt)].url + "/rerank",
                          {"query": queries[0], "texts": rerank_docs}):
                got[r["index"]] = r["score"]
            rel[dt] = float(np.max(np.abs(got - want) / np.abs(want)))
            k = min(10, len(want))
            top10[dt] = len(set(np.argsort(-got)[:k]) & set(np.argsort(-want)[:k])) / k
            log(f"rerank fidelity, orchid {dt}: max relative error of MaxSim {rel[dt]:.2e}, "
                f"top-10 overlap {top10[dt]:.1f}")
            post(servers[("cross-encoder", dt)].url + "/rerank",
                 {"query": queries[0], "texts": rerank_docs, "truncate": True})
        if rel.get("float32", 0.0) > 1e-4:
            raise SystemExit(f"orchid's float32 /rerank differs from PyLate's MaxSim ({rel})")
        rer = {f"orchid ColBERT /rerank {dt}": [] for dt in dtypes}
        rer["PyLate ColBERT rerank"] = []
        rer.update({f"orchid cross-encoder /rerank {dt}": [] for dt in dtypes})
        for r in range(args.rounds):
            query = queries[1 + r]
            names = list(rer)
            order = names[r % len(names):] + names[:r % len(names)]
            for side in order:
                t0 = time.perf_counter()
                if side == "PyLate ColBERT rerank":
                    pylate_rerank(query)
                else:
                    kind = "ColBERT" if " ColBERT " in side else "cross-encoder"
                    body = {"query": query, "texts": rerank_docs}
                    if kind == "cross-encoder":
                        body["truncate"] = True
                    post(servers[(kind, side.rsplit(" ", 1)[1])].url + "/rerank", body)
                rer[side].append(time.perf_counter() - t0)
            log(f"rerank round {r + 1}: " + ", ".join(f"{k} {v[-1]:.3f}s" for k, v in rer.items()))
        startup = {f"{k[0]} {k[1]}": v.startup for k, v in servers.items()}
    finally:
        for v in servers.values():
            v.stop()

    import pylate
    import sentence_transformers
    import transformers
    enc_s = {k: summary(v) for k, v in enc.items()}
    rer_s = {k: summary(v) for k, v in rer.items()}
    pylate_enc = {k: enc_s[k]["median_s"] for k in ("PyLate forward", "PyLate encode()")}
    pylate_rer = rer_s["PyLate ColBERT rerank"]["median_s"]
    result = {
        "machine": machine(), "commit": commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "loadavg_before": load_before, "loadavg_after": loadavg(), "threads": args.threads,
        "rounds": args.rounds, "dtypes": dtypes,
        "versions": {"torch": torch.__version__, "pylate": pylate.__version__,
                     "sentence_transformers": sentence_transformers.__version__,
                     "transformers": transformers.__version__},
        "model": "random-weight BERT 384 x 12 (answerai-colbert-small-v1's shape), projection 96, "
                 "query_length 32, document_length 180; cross-encoder: the same BERT, one label",
        "orchid_startup": startup,
        "encode": {"documents": len(seqs), "tokens": sum(doc_lengths),
                   "min_cosine_per_token": enc_cos, "sides": enc_s,
                   "speedup_vs_pylate_forward": {dt: pylate_enc["PyLate forward"] / enc_s[f"orchid engine {dt}"]["median_s"] for dt in dtypes},
                   "speedup_vs_pylate_encode": {dt: pylate_enc["PyLate encode()"] / enc_s[f"orchid engine {dt}"]["median_s"] for dt in dtypes}},
        "rerank": {"documents": len(rerank_docs), "max_relative_error": rel, "top10_overlap": top10,
                   "sides": rer_s,
                   "speedup_vs_pylate": {dt: pylate_rer / rer_s[f"orchid ColBERT /rerank {dt}"]["median_s"] for dt in dtypes},
                   "cross_encoder_time_over_colbert": {dt: rer_s[f"orchid cross-encoder /rerank {dt}"]["median_s"] / rer_s[f"orchid ColBERT /rerank {dt}"]["median_s"] for dt in dtypes}},
    }
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    base = os.path.join(args.out, f"colbert-pylate-{stamp}")
    result["base"] = base
    Path(base + ".json").write_text(json.dumps(result, indent=1) + "\n")
    Path(base + ".md").write_text(markdown(result))
    log(f"wrote {base}.md / .json")
    log(draw(base, result))


def markdown(r):
    e, k = r["encode"], r["rerank"]
    lines = [
        f"# ColBERT: orchid vs PyLate on PyTorch ({r['date'][:10]})",
        "",
        f"- machine: {r['machine']} (shared with other developers' builds: noisy)",
        f"- commit: {r['commit']}",
        f"- date: {r['date']}",
        f"- load average before / after: {r['loadavg_before']} / {r['loadavg_after']}",
        f"- threads: {r['threads']} on both sides; {r['rounds']} alternating rounds (every side once "
        "per round, the order rotated), medians",
        f"- model: {r['model']}",
        "- peers: " + ", ".join(f"{a} {b}" for a, b in r["versions"].items()) + "; PyLate in "
        "float32 (its default); orchid in each --dtype (int8: start-up check logged, not enforced)",
        "- script: bench/cpu/colbert_vs_pylate.py (its docstring says what each side runs)",
        "",
        "![charts](" + Path(r["base"]).name + ".png)",
        "",
        f"## Per-token encoding: {e['documents']} documents, {e['tokens']} tokens",
        "",
        "| side | median s | min s | max s | documents/s | vs PyLate forward | vs PyLate encode() | min cosine per token vs PyLate |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, s in e["sides"].items():
        dt = name.rsplit(" ", 1)[1] if name.startswith("orchid") else None
        fwd = e["sides"]["PyLate forward"]["median_s"] / s["median_s"]
        enc = e["sides"]["PyLate encode()"]["median_s"] / s["median_s"]
        cos = f"{e['min_cosine_per_token'][dt]:.6f}" if dt else "1 (reference)"
        lines.append(f"| {name} | {s['median_s']:.3f} | {s['min_s']:.3f} | {s['max_s']:.3f} | "
                     f"{e['documents'] / s['median_s']:.1f} | {fwd:.2f}x | {enc:.2f}x | {cos} |")
    lines += ["",
              "orchid engine: transformer + projection on the ids (vectors not normalised); PyLate "
              "forward: the same ids through its modules; PyLate encode(): texts in, normalised "
              "vectors without the skiplist's out.",
              "",
              f"## /rerank: 1 query x {k['documents']} documents of ~180 tokens",
              "",
              "| side | median s | min s | max s | PyLate's time / this | MaxSim max relative error vs PyLate | top-10 overlap |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for name, s in k["sides"].items():
        dt = name.rsplit(" ", 1)[1] if name.startswith("orchid ColBERT") else None
        ratio = k["sides"]["PyLate ColBERT rerank"]["median_s"] / s["median_s"]
        err = f"{k['max_relative_error'][dt]:.1e}" if dt else ("reference" if name.startswith("PyLate") else "another model")
        top = f"{k['top10_overlap'][dt]:.1f}" if dt else ""
        lines.append(f"| {name} | {s['median_s']:.3f} | {s['min_s']:.3f} | {s['max_s']:.3f} | "
                     f"{ratio:.2f}x | {err} | {top} |")
    lines += ["",
              "orchid: the whole request over HTTP to `orchid serve` (JSON, tokenization, query "
              "expansion, engine, MaxSim, reply); PyLate: encode(query), encode(documents) and "
              "rank.rerank in this process (no HTTP).",
              "",
              "Trade-off: a ColBERT compares token vectors (MaxSim), so documents' vectors can be "
              "computed once and stored, and a query then costs its own encoding plus MaxSim; a "
              "cross-encoder reads query and document together, a full forward pass per pair "
              "and per query, and is usually the more accurate reranker. /rerank encodes every "
              "document per request on both, so here their costs are close: cross-encoder time / "
              "ColBERT time = " + ", ".join(f"{v:.2f} ({dt})" for dt, v in
                                             k["cross_encoder_time_over_colbert"].items()) + ".",
              ""]
    return "\n".join(lines)


def draw(base, r):
    try:
        sys.path.insert(0, os.path.join(REPO, "bench"))
        from plots import meta_line, pyplot, save
        plt = pyplot()
    except ImportError as e:
        # Another of this repo's Pythons may have it (as bench/plots.py's plot_after_run).
        for py in (Path(REPO) / v / "bin" / "python" for v in (".venv-peers", ".venv-bench", ".venv-peer")):
            if py.exists() and subprocess.run([str(py), "-c", "import matplotlib"],
                                              capture_output=True).returncode == 0:
                return subprocess.run([str(py), __file__, "--replot", base + ".json"],
                                      capture_output=True, text=True).stdout.strip()
        return f"plots: no matplotlib ({e}); no PNG"
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    for ax, key, title in ((axes[0], "encode", f"per-token encoding, {r['encode']['documents']} documents of ~180 tokens"),
                           (axes[1], "rerank", f"rerank, 1 query x {r['rerank']['documents']} documents")):
        sides = r[key]["sides"]
        for i, (name, s) in enumerate(sides.items()):
            color = "C0" if name.startswith("orchid") and "cross" not in name else \
                ("C1" if name.startswith("PyLate") else "C2")
            ax.barh(i, s["median_s"], color=color, height=0.6)
            ax.plot(s["all_s"], [i] * len(s["all_s"]), "k.", ms=4)
            ax.annotate(f"{s['median_s']:.2f}s", (s["median_s"], i), va="center", xytext=(3, 0),
                        textcoords="offset points", fontsize=7)
        ax.set_yticks(range(len(sides)))
        ax.set_yticklabels(list(sides), fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("seconds (bars: median; dots: runs)")
        ax.set_title(title)
    meta = meta_line(base + ".json", r)
    return f"wrote {save(fig, 'ColBERT: orchid vs PyLate on PyTorch (issue 32)', base + '.png', meta)}"


if __name__ == "__main__":
    main()
