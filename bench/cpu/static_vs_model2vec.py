#!/usr/bin/env python3
"""Static embedding models (model2vec's layout) on the CPU: orchid against model2vec's own
`StaticModel.encode`, same machine, same run, same sentences (STS-B English, each sentence once, repeated to the count when asked for more).

The model is tests/fixtures/static/build.py's static-model2vec (a random table of 30522 x 256,
potion-base's width, all-MiniLM-L6-v2's WordPiece tokenizer, normalised) with model2vec's default
max_length of 512. Sides, each timed --runs times, alternating:

  - model2vec encode: `StaticModel.encode(sentences)` on a model loaded beforehand (its defaults:
    batches of 1024; threads above 10,000 sentences);
  - orchid embed: the whole `orchid embed` process (start, load, JSONL in, tokenize, mean,
    .npy out), `--truncate` as model2vec cuts;
  - orchid serve: an `orchid serve` started beforehand, POST /v1/embeddings with --batch texts a
    request from one client, one request after the other, truncate true, base64 rows (JSON
    floats would time the client's float parsing).

Before timing, orchid's rows are checked against model2vec's (cosine >= 0.99999 for every
sentence). Medians over --runs.

  .venv-ref-static/bin/python bench/cpu/static_vs_model2vec.py [--sentences 20000] [--runs 5]

(any Python with model2vec and requests). Writes bench/results/static-vs-model2vec-*.{md,json}.
"""
import argparse
import base64
import csv
import datetime
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine_vs_torch import SHARED, REPO, commit, machine  # noqa: E402


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
    while len(out) < n:  # repeat when asked for more than STS-B has
        out += out[:n - len(out)]
    return out[:n], len(seen)


def build_model(root):
    spec = importlib.util.spec_from_file_location(
        "static_build", os.path.join(REPO, "tests", "fixtures", "static", "build.py"))
    b = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(b)
    b.build(root)
    d = os.path.join(root, "static-model2vec")
    config = json.load(open(os.path.join(d, "config.json")))
    config["max_length"] = 512  # model2vec's default
    json.dump(config, open(os.path.join(d, "config.json"), "w"), indent=4)
    return d


def post(url, body):
    req = urllib.request.Request(url + "/v1/embeddings", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sentences", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--orchid", default=os.environ.get("ORCHID_BIN",
                                                       os.path.join(REPO, "build", "orchid")))
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    args = ap.parse_args()
    from model2vec import StaticModel
    import model2vec

    load_before = os.getloadavg()
    texts, unique = sentences(args.sentences)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_model(os.path.join(tmp, "models"))
        t0 = time.perf_counter()
        model = StaticModel.from_pretrained(model_dir)
        load_s = time.perf_counter() - t0
        jsonl = os.path.join(tmp, "in.jsonl")
        with open(jsonl, "w", encoding="utf-8") as f:
            for s in texts:
                f.write(json.dumps(s) + "\n")
        npy = os.path.join(tmp, "out.npy")

        def model2vec_run():
            t = time.perf_counter()
            out = model.encode(texts)
            return time.perf_counter() - t, out

        def orchid_embed_run():
            t = time.perf_counter()
            subprocess.run([args.orchid, "embed", "--model", model_dir, "--input", jsonl,
                            "--output", npy, "--truncate"], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return time.perf_counter() - t, np.load(npy)

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
            # Keep reading its log so that the pipe never fills.
            import threading
            threading.Thread(target=lambda: [None for _ in server.stdout], daemon=True).start()

            def orchid_serve_run():
                t = time.perf_counter()
                rows = []
                for i in range(0, len(texts), args.batch):
                    r = post(url, {"input": texts[i:i + args.batch], "truncate": True,
                                   "encoding_format": "base64"})
                    rows += [np.frombuffer(base64.b64decode(d["embedding"]), dtype="<f4")
                             for d in r["data"]]
                return time.perf_counter() - t, np.stack(rows)

            sides = {"model2vec encode": model2vec_run, "orchid embed": orchid_embed_run,
                     "orchid serve (HTTP)": orchid_serve_run}
            ref = model2vec_run()[1].astype(np.float64)
            fidelity = {}
            for name, run in sides.items():
                got = run()[1].astype(np.float64)
                cos = (got * ref).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(ref, axis=1)
                fidelity[name] = float(cos.min())
                assert cos.min() >= 0.99999, (name, cos.min(), int(cos.argmin()))
            times = {name: [] for name in sides}
            for _ in range(args.runs):
                for name, run in sides.items():
                    times[name].append(run()[0])
        finally:
            server.terminate()
            server.wait(timeout=60)

    load_after = os.getloadavg()
    n = len(texts)
    med = {k: statistics.median(v) for k, v in times.items()}
    rate = {k: n / v for k, v in med.items()}
    stamp = datetime.datetime.now(datetime.timezone.utc)
    name = f"static-vs-model2vec-{stamp:%Y%m%d-%H%M%S}"
    result = {"machine": machine(), "commit": commit(), "date": stamp.isoformat(timespec="seconds"),
              "sentences": n, "unique_sentences": unique, "runs": args.runs, "batch": args.batch,
              "model2vec": model2vec.__version__, "model2vec_load_s": load_s,
              "loadavg_before_after": [load_before, load_after], "times_s": times, "median_s": med, "texts_per_s": rate, "min_cosine": fidelity}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, name + ".json"), "w") as f:
        json.dump(result, f, indent=1)
    base = rate["model2vec encode"]
    lines = [
        "# Static embeddings: orchid vs model2vec's `StaticModel.encode`", "",
        f"- machine: {result['machine']} (shared: read medians and ratios); load average "
        f"{load_before[0]:.2f} before, {load_after[0]:.2f} after",
        f"- commit: {result['commit']}; date: {result['date']}",
        f"- {n} STS-B sentences (English; the {unique} distinct ones of train+dev+test, "
        f"repeated as needed), a model2vec directory of "
        f"30522 x 256 (random table, all-MiniLM-L6-v2's tokenizer, normalize, max_length 512); "
        f"model2vec {model2vec.__version__} (its load: {load_s:.2f} s)",
        "- model2vec: `encode()` alone on a loaded model, its defaults; orchid embed: the whole "
        "process; orchid serve: /v1/embeddings from one client, "
        f"{args.batch} texts a request (base64 rows), the server started beforehand; orchid on "
        "all cores",
        "- fidelity before timing (min cosine against model2vec): " +
        ", ".join(f"{k} {v:.7f}" for k, v in fidelity.items()),
        f"- made by `bench/cpu/static_vs_model2vec.py --sentences {n} --runs {args.runs}`", "",
        "| side | runs (s) | median s | texts/s | vs model2vec |", "|---|---|---|---|---|"]
    for k in sides:
        lines.append(f"| {k} | {', '.join(f'{t:.3f}' for t in times[k])} | {med[k]:.3f} | "
                     f"{rate[k]:,.0f} | {rate[k] / base:.2f}x |")
    with open(os.path.join(args.out, name + ".md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
