#!/usr/bin/env python3
"""Issue 31's benchmark, "int8 at reference fidelity": orchid's CPU engine in float32, bfloat16 and
int8 against the CPU runtimes a user would pick instead, in one run, on the same held-out text,
each row's embeddings compared with PyTorch fp32's (sentence-transformers, the reference).

Rows (every model; a peer that cannot run a model says "not supported: why" in its row):
  orchid fp32 / bf16 / int8   `orchid embed` (--dtype float32 / bfloat16 / int8
                              --int8-serve-anyway --int8-cache off), the whole process: start,
                              model load (int8: its start-up calibration and check), JSONL in,
                              tokenize, engine, .npy out, wall clock
  orchid int8 (check kept)  the same with --int8-cache DIR: the untimed warm-up run keeps the
                              start-up check's results there and the timed runs read them back
                              (a process started again with the same binary, model and CPU)
  PyTorch fp32 / bf16         sentence-transformers on PyTorch, encode() (model in bfloat16:
                              model_kwargs torch_dtype)
  ONNX Runtime fp32 / int8    sentence-transformers backend="onnx" (optimum-onnx's export), and
                              its export_dynamic_quantized_onnx_model (the config matching the CPU:
                              avx512_vnni, avx512 or avx2)
  OpenVINO f32 / bf16         sentence-transformers backend="openvino" (optimum-intel's export),
                              ov_config INFERENCE_PRECISION_HINT f32 / bf16
  OpenVINO f32 / bf16 (ONNX)  the openvino package alone (no optimum-intel, which pins an old
                              transformers) on the ONNX Runtime rows' model.onnx: Core.compile_model
                              with the precision hint; tokenizer, batching (32, encode()'s length
                              order), pooling and normalisation of sentence-transformers around it
  CTranslate2 fp32 / int8     ct2's TransformersConverter + ctranslate2.Encoder (compute_type
                              float32 / int8), the tokenizer, pooling and normalisation of
                              sentence-transformers done around it (numpy), batches of 32 in
                              encode()'s length order
The Python rows time encode() alone on a loaded model (load, export and conversion times are
reported apart), as bench/cpu/embed_file_vs_st.py does; orchid's rows include everything.

Engine level, beside it: orchid_engine_bench --interactive (fp32 / bf16 / int8, the model loaded
once) against sentence-transformers' forward on PyTorch fp32 / bf16, on the same pre-tokenized
batches (--engine-batches x --engine-length tokens cut from the same texts' token stream), as
bench/cpu/families_vs_torch.py does; no tokenizer, no process start.

Models: all-MiniLM-L6-v2 (models/), all-mpnet-base-v2 (models/, the real one) and
qwen3-0.6b-causal (Qwen3-0.6B's shape, random weights, last-token pooling + L2: the builder of
families_vs_torch.py, cached in models/bench/, plus Qwen3-Embedding's tokenizer).
Workloads (--workload): short (below), or docs: held-out documents of 300-512 tokens
(held_out_docs: STS-B train sentences joined in file order), 64 per model, each truncated at the
model's maximum (issue 44's long-document workload; results in long-docs-peers-*).

Text: English STS-B *train* sentences (tests/data/stsb; the tests read the test split and their
committed fixtures, whose sentences are removed here), deduplicated, in a seeded shuffle.

Method: threads 2 everywhere (torch.set_num_threads, ORT intra-op threads, OpenVINO
INFERENCE_NUM_THREADS, CTranslate2 intra_threads, orchid --threads). Every row runs once untimed
first (warm-up; its embeddings give the cosines), then --runs timed runs per row in round robin
(each round in a rotated order, --gap s idle between runs), so a noisy neighbour's drift lands
on every row; medians. Cosines: every text's embedding against PyTorch fp32's, min and mean.

  bench/cpu/setup-peers.sh                                     # .venv-peers, once
  .venv-peers/bin/python bench/cpu/int8_vs_peers.py [--models all-MiniLM-L6-v2] [--runs 3] [--quick]
  .venv-peers/bin/python bench/cpu/int8_vs_peers.py --check-peers DIR   # does each peer load DIR?

Writes bench/results/int8-peers-YYYYMMDD-HHMMSS.{md,json,png} (docs: long-docs-peers-*). Converted and exported peer
models are cached outside the repo (--cache-dir, default /tmp/orchid-peers-cache).
"""
import argparse
import csv
import datetime
import gc
import hashlib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

# Before numpy / torch / OpenVINO start their thread pools.
THREADS_DEFAULT = 2
for _v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_v, str(THREADS_DEFAULT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "cpu"))
from engine_vs_torch import SHARED, commit  # noqa: E402  (also puts bench/ on the path)

STSB_TRAIN = Path(SHARED) / "stsb" / "stsb-en-train.csv"
# What the tests read: their committed sentence fixtures (drawn from every STS-B file) and the
# test split (tests/e2e). Their sentences are removed from the benchmark's texts.
TEST_FIXTURES = [REPO / "tests" / "fixtures" / "stsb" / "reference_sentences.json",
                 *sorted((REPO / "tests" / "fixtures" / "real_models").glob("*/sentences.json"))]

MODELS = {
    # name: default directory (None: built), texts, what it is
    "all-MiniLM-L6-v2": (REPO / "models" / "all-MiniLM-L6-v2", 2000, "the real all-MiniLM-L6-v2"),
    "all-mpnet-base-v2": (REPO / "models" / "all-mpnet-base-v2", 500, "the real all-mpnet-base-v2 (BERT-base size)"),
    "qwen3-0.6b-causal": (None, 200, "Qwen3-0.6B's shape, random weights (seed 0), causal, last-token pooling + L2, "
                                     "Qwen3-Embedding's tokenizer"),
}
ORCHID_ROWS = [("orchid fp32", "float32"), ("orchid bf16", "bfloat16"), ("orchid int8", "int8"),
               ("orchid int8 (check kept)", "int8-kept")]
PEER_ROWS = ["PyTorch fp32", "PyTorch bf16", "ONNX Runtime fp32", "ONNX Runtime int8", "OpenVINO f32",
             "OpenVINO bf16", "OpenVINO f32 (ONNX)", "OpenVINO bf16 (ONNX)", "CTranslate2 fp32", "CTranslate2 int8"]
ALL_ROWS = [r for r, _ in ORCHID_ROWS] + PEER_ROWS
REFERENCE = "PyTorch fp32"
FLAGS_OF_INTEREST = ["avx2", "avx_vnni", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16", "avx512_fp16",
                     "amx_tile", "amx_bf16", "amx_int8"]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# --- machine, versions, engine paths ---------------------------------------------------------------

def cpu_info():
    model, flags = "unknown", set()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, env=dict(os.environ, LC_ALL="C")).stdout
        for line in out.splitlines():
            k, _, v = line.partition(":")
            if k.strip() == "Model name":
                model = v.strip()
            elif k.strip() == "Flags":
                flags = set(v.split())
    except OSError:
        pass
    if not flags:
        try:
            for line in open("/proc/cpuinfo"):
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                elif line.startswith("model name") and model == "unknown":
                    model = line.split(":", 1)[1].strip()
        except OSError:
            pass
    import platform
    return {"model": model, "cores": os.cpu_count(), "os": f"{platform.system()} {platform.release()}",
            "flags": [f for f in FLAGS_OF_INTEREST if f in flags]}


def machine_line(cpu):
    flags = " ".join(cpu["flags"]) or "none of " + ", ".join(FLAGS_OF_INTEREST)
    return f"{cpu['model']}, {cpu['cores']} cores, {cpu['os']} (flags: {flags})"


def dirty_note():
    try:
        lines = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain"], capture_output=True,
                               text=True).stdout.splitlines()
    except OSError:
        return ""
    if not lines:
        return "clean working tree"
    return (f"working tree dirty: {len(lines)} paths modified or untracked (the binaries are build/'s, "
            "built from that tree)")


def versions():
    out = {}
    for name, mod in (("torch", "torch"), ("sentence-transformers", "sentence_transformers"),
                      ("transformers", "transformers"), ("onnxruntime", "onnxruntime"),
                      ("openvino", "openvino"), ("ctranslate2", "ctranslate2"), ("numpy", "numpy")):
        try:
            out[name] = __import__(mod).__version__
        except Exception as e:  # noqa: BLE001
            out[name] = f"missing ({type(e).__name__})"
    try:
        from importlib.metadata import version
        for dist in ("optimum", "optimum-onnx", "optimum-intel", "nncf"):
            try:
                out[dist] = version(dist)
            except Exception:  # noqa: BLE001
                out[dist] = "missing"
    except ImportError:
        pass
    return out


def torch_paths(threads):
    """Which kernels PyTorch's fp32 and bf16 linear layers run here: one small product of each under
    MKL_VERBOSE / ONEDNN_VERBOSE, in a child process (the verbose output goes to its stdout)."""
    code = ("import torch; torch.set_num_threads(%d)\n"
            "x = torch.randn(64, 384); w = torch.randn(384, 384)\n"
            "torch.nn.functional.linear(x, w)\n"
            "torch.nn.functional.linear(x.bfloat16(), w.bfloat16())\n"
            "print('CAPABILITY', torch.backends.cpu.get_cpu_capability())\n" % threads)
    env = dict(os.environ, MKL_VERBOSE="1", ONEDNN_VERBOSE="1")
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        text = out.stdout + out.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": str(e)}
    res = {}
    m = re.search(r"CAPABILITY (\S+)", text)
    res["cpu_capability"] = m.group(1) if m else "?"
    m = re.search(r"MKL_VERBOSE (oneMKL [^,]*?) Product build", text) or re.search(r"MKL_VERBOSE (.*?)(?:,|$)", text, re.M)
    sgemm = "SGEMM" in text
    res["fp32"] = (f"MKL SGEMM ({m.group(1)})" if m and sgemm else
                   "oneDNN" if "matmul" in text.split("CAPABILITY")[0] and not sgemm else "not logged")
    m = re.search(r"onednn_verbose,.*?info,cpu,isa:([^\n]*)", text)
    res["onednn_isa"] = m.group(1).strip() if m else "not logged"
    impls = re.findall(r"onednn_verbose,.*?primitive,exec,cpu,(?:matmul|inner_product),([^,]+),", text)
    res["bf16"] = f"oneDNN {', '.join(dict.fromkeys(impls))}" if impls else "not logged"
    return res


def ct2_path(ct2_dir, threads):
    """CTranslate2's own account of the ISA it picked (CT2_VERBOSE=1 on loading the model)."""
    code = ("import ctranslate2; ctranslate2.Encoder(%r, device='cpu', compute_type='int8', intra_threads=%d)\n"
            % (str(ct2_dir), threads))
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                             env=dict(os.environ, CT2_VERBOSE="1"))
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"probe failed: {e}"
    text = out.stdout + out.stderr
    keep = [re.sub(r"^(\[[^\]]*\]\s*)+", "", ln).strip().lstrip("- ") for ln in text.splitlines()
            if re.search(r"CPU:|ISA|MKL|oneDNN|Using", ln)]
    return "; ".join(dict.fromkeys(k for k in keep if k)) or "not logged"


# --- texts and models ------------------------------------------------------------------------------

def _strings(x):
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for v in x.values():
            yield from _strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from _strings(v)


def held_out_texts(n, seed=31):
    used = set()
    for p in TEST_FIXTURES:
        if p.exists():
            used.update(s.strip() for s in _strings(json.loads(p.read_text(encoding="utf-8"))))
    pool = []
    with open(STSB_TRAIN, newline="", encoding="utf-8") as f:
        for row in csv.reader(f):
            pool.extend(s.strip() for s in row[:2])
    pool = [s for s in dict.fromkeys(pool) if s and s not in used]
    random.Random(seed).shuffle(pool)
    if n > len(pool):
        sys.exit(f"asked for {n} texts, {STSB_TRAIN} has {len(pool)} usable")
    return pool[:n]


def held_out_docs(n, tok_json, lo=300, hi=512, seed=44):
    """n documents of lo..hi tokens (the model's own tokenizer, special tokens not counted; each
    document's target drawn uniformly, seeded): the first sentence of each STS-B train pair, in the file's
    order (captions, then news, then forums: neighbours share a genre), deduplicated and without the
    tests' sentences, joined with spaces until the target is reached. What a RAG indexer sends: the
    model truncates at its maximum (all-mpnet-base-v2: 384) as it would a real passage."""
    from tokenizers import Tokenizer
    used = set()
    for p in TEST_FIXTURES:
        if p.exists():
            used.update(s.strip() for s in _strings(json.loads(p.read_text(encoding="utf-8"))))
    with open(STSB_TRAIN, newline="", encoding="utf-8") as f:
        pool = [row[0].strip() for row in csv.reader(f) if row and row[0].strip()]
    pool = [s for s in dict.fromkeys(pool) if s not in used]
    tok = Tokenizer.from_file(str(tok_json))
    tok.no_truncation()
    tok.no_padding()
    lengths = [len(e.ids) for e in tok.encode_batch(pool, add_special_tokens=False)]
    rng = random.Random(seed)
    docs, i = [], 0
    while len(docs) < n:
        target, parts, count = rng.randint(lo, hi), [], 0
        while count < target:
            if i >= len(pool):
                sys.exit(f"asked for {n} documents of {lo}-{hi} tokens, {STSB_TRAIN} has enough for {len(docs)}")
            parts.append(pool[i])
            count += lengths[i] + 1  # (about one more where sentences meet)
            i += 1
        docs.append(" ".join(parts))
    return docs


def link_or_copy(src, dst):
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


QWEN3_TOKENIZER_DIR = Path(SHARED) / "tokenizers" / "qwen3"


def with_tokenizer(src, dst):
    """src, a model directory without tokenizer files (the random-weight builders write none), as dst:
    the same files (weights hard-linked, small files copied) plus Qwen3-Embedding's tokenizer
    (Qwen3's, <|endoftext|> appended: make_qwen3_embedding.py) and Qwen3's tokenizer_config.json, so
    that both orchid and sentence-transformers tokenize the texts, the same way."""
    stamp = dst / ".int8-peers-ready"
    if stamp.exists() and stamp.read_text() == fingerprint(src):
        return dst
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, copy_function=lambda s, d: (link_or_copy(s, d) if s.endswith(".safetensors")
                                                          else shutil.copy2(s, d)))
    if not (dst / "tokenizer.json").exists():
        sys.path.insert(0, str(REPO / "tests" / "fixtures" / "tokenizer"))
        from make_qwen3_embedding import write
        write(str(dst / "tokenizer.json"), QWEN3_TOKENIZER_DIR / "tokenizer.json")
    if not (dst / "tokenizer_config.json").exists():
        cfg = json.loads((QWEN3_TOKENIZER_DIR / "tokenizer_config.json").read_text())
        sb = json.loads((dst / "sentence_bert_config.json").read_text()) if (dst / "sentence_bert_config.json").exists() else {}
        cfg["model_max_length"] = sb.get("max_seq_length", 8192)
        cfg.setdefault("pad_token", "<|endoftext|>")
        cfg["padding_side"] = "right"
        (dst / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2))
    stamp.write_text(fingerprint(src))
    return dst


def model_dir(name, override, cache):
    if override:
        d = Path(override).resolve()
        qwen = json.loads((d / "config.json").read_text()).get("model_type", "").startswith("qwen")
        if qwen and not ((d / "tokenizer.json").exists() and (d / "tokenizer_config.json").exists()):
            d = with_tokenizer(d, cache / (d.name + "-with-tokenizer"))
        return d
    default = MODELS[name][0]
    if default is not None:
        return default
    # qwen3-0.6b-causal: families_vs_torch.py's builder (seeded transformers init, cached in models/bench/).
    from families_vs_torch import make_model
    log(f"{name}: building (once) with families_vs_torch.make_model into models/bench/ ...")
    built = make_model(name, REPO / "models" / "bench")
    return with_tokenizer(built, REPO / "models" / "bench" / f"{name}-text")


def fingerprint(d):
    """What the peer caches of a model directory are keyed by: its config and weights' sizes and times."""
    h = hashlib.sha1(str(d.resolve()).encode())
    for p in sorted(d.glob("*")):
        if p.is_file():
            st = p.stat()
            h.update(f"{p.name}:{st.st_size}:{int(st.st_mtime)}".encode())
    return h.hexdigest()[:10]


def pooling_of(d):
    """(mode, normalize) from a sentence-transformers directory, for the rows that pool themselves."""
    modules = json.loads((d / "modules.json").read_text())
    normalize = any(m["type"].endswith("Normalize") for m in modules)
    pool = next(m for m in modules if m["type"].endswith("Pooling"))
    cfg = json.loads((d / pool["path"] / "config.json").read_text())
    for key, mode in (("pooling_mode_mean_tokens", "mean"), ("pooling_mode_cls_token", "cls"),
                      ("pooling_mode_lasttoken", "lasttoken"), ("pooling_mode_max_tokens", "max")):
        if cfg.get(key):
            return mode, normalize
    raise ValueError(f"{d}: pooling mode not handled here")


# --- rows -------------------------------------------------------------------------------------------

class Row:
    """One way of embedding the texts: run() -> float32 [n, dim]; timing around it by the caller."""

    def __init__(self, name):
        self.name = name
        self.status = "ok"
        self.load_s = None     # loading the ready model (Python rows)
        self.prep_s = None     # exporting / converting it, when this run did
        self.prep_note = ""
        self.path = ""         # which engine path ran
        self.logs = []
        self.times = []
        self.emb = None
        self.closer = None

    def run(self):
        raise NotImplementedError

    def close(self):
        if self.closer:
            self.closer()
        self.closer = None


class OrchidEmbed(Row):
    def __init__(self, name, dtype, args, mdir, src, tmp):
        super().__init__(name)
        self.dtype = dtype
        self.out = Path(tmp) / f"orchid-{dtype}.npy"
        self.cmd = [args.orchid, "embed", "--model", str(mdir), "--input", str(src), "--output", str(self.out),
                    "--threads", str(args.threads), "--dtype", dtype.removesuffix("-kept"), "--truncate",
                    "--quiet"]
        if dtype == "int8":
            self.cmd += ["--int8-serve-anyway", "--int8-cache", "off"]
        elif dtype == "int8-kept":
            self.cmd += ["--int8-serve-anyway", "--int8-cache", str(Path(tmp) / "int8-cache")]
        self.env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), OPENBLAS_NUM_THREADS=str(args.threads))

    def run(self):
        p = subprocess.run(self.cmd, capture_output=True, text=True, env=self.env)
        if p.returncode != 0:
            raise RuntimeError(f"orchid embed --dtype {self.dtype} exited {p.returncode}: {p.stderr.strip()[-800:]}")
        if not self.logs:  # orchid logs (spdlog) to stdout
            self.logs = [re.sub(r"^(\[[^\]]*\]\s*)+", "", ln) for ln in (p.stdout + p.stderr).splitlines()
                         if "--dtype" in ln]
            paths = [ln for ln in self.logs if "multiply" in ln]
            self.path = "; ".join(paths) or ("packed fp32 kernel (--gemm auto: orchid's AVX2/AVX-512 kernel "
                                             "where the CPU has it; no kernel line logged)")
        return np.load(self.out)


class STRow(Row):
    """sentence-transformers encode() on any of its backends."""

    def __init__(self, name, st, batch_size):
        super().__init__(name)
        self.st = st
        self.batch_size = batch_size
        self.texts = None

    def run(self):
        return np.asarray(self.st.encode(self.texts, batch_size=self.batch_size, convert_to_numpy=True,
                                         show_progress_bar=False), dtype=np.float32)


class PooledRow(Row):
    """A runtime that returns hidden states, with sentence-transformers' tokenizer, batching (batches of
    batch_size in encode()'s length order), pooling and normalisation done around it in numpy."""

    def __init__(self, name, tokenizer, max_len, pooling, normalize, batch_size):
        super().__init__(name)
        self.tok, self.max_len = tokenizer, max_len
        self.pooling, self.normalize, self.batch_size = pooling, normalize, batch_size
        self.texts = None

    def hidden(self, ids):
        """ids: a list of token id lists -> float32 [b, longest, d]."""
        raise NotImplementedError

    def run(self):
        texts = self.texts
        order = np.argsort([-len(t) for t in texts], kind="stable")  # encode()'s order
        out = [None] * len(texts)
        for start in range(0, len(texts), self.batch_size):
            idx = order[start:start + self.batch_size]
            ids = self.tok([texts[i] for i in idx], truncation=True, max_length=self.max_len)["input_ids"]
            h = self.hidden(ids)  # [b, t, d]
            lens = np.array([len(x) for x in ids])
            mask = (np.arange(h.shape[1])[None, :] < lens[:, None]).astype(np.float32)[..., None]
            if self.pooling == "mean":
                v = (h * mask).sum(1) / np.maximum(mask.sum(1), 1e-9)
            elif self.pooling == "cls":
                v = h[:, 0]
            elif self.pooling == "lasttoken":
                v = h[np.arange(len(ids)), lens - 1]
            else:
                raise ValueError(self.pooling)
            if self.normalize:
                v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
            for j, i in enumerate(idx):
                out[i] = v[j]
        return np.stack(out).astype(np.float32)


class CT2Row(PooledRow):
    """ctranslate2.Encoder."""

    def __init__(self, name, encoder, tokenizer, max_len, pooling, normalize, batch_size):
        super().__init__(name, tokenizer, max_len, pooling, normalize, batch_size)
        self.encoder = encoder

    def hidden(self, ids):
        return np.array(self.encoder.forward_batch(ids).last_hidden_state, dtype=np.float32)


class OVOnnxRow(PooledRow):
    """The openvino package alone (no optimum-intel) on the model's ONNX export: Core.compile_model of
    the .onnx file with a precision hint, fed right-padded ids and the attention mask."""

    def __init__(self, name, compiled, tokenizer, max_len, pooling, normalize, batch_size):
        super().__init__(name, tokenizer, max_len, pooling, normalize, batch_size)
        self.compiled = compiled
        self.request = compiled.create_infer_request()
        self.inputs = {i.get_any_name() for i in compiled.inputs}
        names = [o.get_any_name() for o in compiled.outputs]
        self.output = compiled.outputs[names.index("last_hidden_state") if "last_hidden_state" in names else 0]

    def hidden(self, ids):
        longest = max(len(x) for x in ids)
        pad = self.tok.pad_token_id or 0
        arr = np.full((len(ids), longest), pad, dtype=np.int64)
        mask = np.zeros((len(ids), longest), dtype=np.int64)
        for j, x in enumerate(ids):
            arr[j, :len(x)] = x
            mask[j, :len(x)] = 1
        feed = {"input_ids": arr, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(arr)
        if "position_ids" in self.inputs:
            feed["position_ids"] = np.maximum(np.cumsum(mask, axis=1) - 1, 0)
        feed = {k: v for k, v in feed.items() if k in self.inputs}
        res = self.request.infer(feed)
        return np.asarray(res[self.output], dtype=np.float32)


def unsupported(name, reason):
    r = Row(name)
    r.status = f"not supported: {reason}"
    return r


def failed(name, exc):
    r = Row(name)
    msg = f"{type(exc).__name__}: {exc}".strip().replace("\n", " ")
    r.status = f"failed: {msg[:300]}"
    log(f"  {name}: {r.status}")
    traceback.print_exc(file=sys.stderr)
    return r


def quant_config_for(cpu):
    flags = set(cpu["flags"])
    if "avx512_vnni" in flags:
        return "avx512_vnni"
    if "avx512f" in flags and "avx512bw" in flags:
        return "avx512"
    return "avx2"


def ort_session_options(threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return so


def ort_quant_text(qname):
    """What sentence-transformers' export_dynamic_quantized_onnx_model(model, qname) quantises, and how."""
    try:
        from optimum.onnxruntime.configuration import AutoQuantizationConfig
        q = getattr(AutoQuantizationConfig, qname)(is_static=False)
        name = lambda t: getattr(t, "name", str(t))  # noqa: E731
        return (f"dynamic int8, optimum's {qname} config: {name(q.format)} {name(q.mode)}, activations "
                f"{name(q.activations_dtype)} per tensor ({'symmetric' if q.activations_symmetric else 'asymmetric'}), "
                f"weights {name(q.weights_dtype)} {'per channel' if q.per_channel else 'per tensor'}"
                f"{', reduce_range' if q.reduce_range else ''}; ops {', '.join(q.operators_to_quantize)}")
    except Exception as e:  # noqa: BLE001
        return f"dynamic int8, optimum's {qname} config ({e})"


def feed_position_ids(st):
    """optimum-onnx exports decoder models (Qwen3) for feature extraction with a position_ids input,
    which sentence-transformers' ONNX backend does not pass (ValueError "Input position_ids is
    required by model but not provided"). Give them as transformers computes them for right-padded
    input (0, 1, 2, ... per sequence). Returns whether the model needed it."""
    model = st[0].auto_model
    if "position_ids" not in getattr(model, "input_names", {}):
        return False
    forward = model.forward

    def with_positions(*a, **kw):
        if kw.get("position_ids") is None and kw.get("attention_mask") is not None:
            mask = kw["attention_mask"]
            kw["position_ids"] = (mask.long().cumsum(-1) - 1).clamp(min=0)
        return forward(*a, **kw)
    model.forward = with_positions
    return True


def export_onnx(mdir, onnx_dir):
    """sentence-transformers' ONNX export (optimum-onnx) of mdir into onnx_dir, once: (seconds or None, note)."""
    if (onnx_dir / "onnx" / "model.onnx").exists():
        return None, "cached"
    from sentence_transformers import SentenceTransformer
    t = time.perf_counter()
    log(f"  exporting to ONNX into {onnx_dir} ...")
    exp = SentenceTransformer(str(mdir), device="cpu", backend="onnx",
                              model_kwargs={"provider": "CPUExecutionProvider"})
    if onnx_dir.exists():
        shutil.rmtree(onnx_dir)
    exp.save_pretrained(str(onnx_dir))
    del exp
    return time.perf_counter() - t, "exported in this run"


def make_peers(mdir, cache, args, cpu, wanted):
    """The Python rows for one model, loaded (exported / converted once into cache first)."""
    import torch
    from sentence_transformers import SentenceTransformer
    torch.set_num_threads(args.threads)
    rows = {}
    bs = args.batch_size

    def timed_load(fn):
        t = time.perf_counter()
        obj = fn()
        return obj, time.perf_counter() - t

    for name, dtype in (("PyTorch fp32", torch.float32), ("PyTorch bf16", torch.bfloat16)):
        if name not in wanted and not (name == REFERENCE):
            continue
        try:
            st, s = timed_load(lambda: SentenceTransformer(str(mdir), device="cpu", model_kwargs={"torch_dtype": dtype}))
            r = STRow(name, st, bs)
            r.load_s = s
            r.path = ""  # filled from torch_paths() by the caller
            rows[name] = r
        except Exception as e:  # noqa: BLE001
            rows[name] = failed(name, e)

    # ONNX Runtime: sentence-transformers' export (optimum-onnx), then its dynamic int8 quantisation.
    onnx_dir = cache / "onnx"
    qname = quant_config_for(cpu)
    qfile = f"onnx/model_qint8_{qname}.onnx"
    if {"ONNX Runtime fp32", "ONNX Runtime int8"} & wanted:
        try:
            prep_s, note = export_onnx(mdir, onnx_dir)
            for name, fname in (("ONNX Runtime fp32", "onnx/model.onnx"), ("ONNX Runtime int8", qfile)):
                if name not in wanted:
                    continue
                try:
                    qprep = None
                    if name.endswith("int8") and not (onnx_dir / fname).exists():
                        from sentence_transformers import export_dynamic_quantized_onnx_model
                        t = time.perf_counter()
                        log(f"  dynamic int8 quantisation ({qname}) ...")
                        base = SentenceTransformer(str(onnx_dir), device="cpu", backend="onnx",
                                                   model_kwargs={"file_name": "onnx/model.onnx",
                                                                 "provider": "CPUExecutionProvider"})
                        export_dynamic_quantized_onnx_model(base, qname, str(onnx_dir))
                        del base
                        qprep = time.perf_counter() - t
                    kw = {"file_name": fname, "provider": "CPUExecutionProvider",
                          "session_options": ort_session_options(args.threads)}
                    st, s = timed_load(lambda: SentenceTransformer(str(onnx_dir), device="cpu", backend="onnx",
                                                                   model_kwargs=kw))
                    r = STRow(name, st, bs)
                    r.load_s = s
                    fed = feed_position_ids(st)
                    if name.endswith("fp32"):
                        r.prep_s, r.prep_note = prep_s, f"ONNX export: {note}"
                        r.path = "CPUExecutionProvider (MLAS, kernels picked by CPUID)"
                    else:
                        r.prep_s = (prep_s or 0) + (qprep or 0) if (prep_s or qprep) else None
                        r.prep_note = f"quantisation: {'in this run' if qprep else 'cached'}"
                        r.path = f"CPUExecutionProvider, {ort_quant_text(qname)}"
                    if fed:
                        r.path += ("; position_ids fed by this benchmark (the exported graph needs them, "
                                   "sentence-transformers' ONNX backend does not pass them)")
                    rows[name] = r
                except Exception as e:  # noqa: BLE001
                    rows[name] = failed(name, e)
        except Exception as e:  # noqa: BLE001
            for name in ("ONNX Runtime fp32", "ONNX Runtime int8"):
                if name in wanted:
                    rows[name] = failed(name, e)

    # OpenVINO: sentence-transformers' export (optimum-intel), compiled with each precision hint.
    ov_dir = cache / "openvino"
    if {"OpenVINO f32", "OpenVINO bf16"} & wanted:
        prep_s, note = None, "cached"
        try:
            if not (ov_dir / "openvino" / "openvino_model.xml").exists():
                t = time.perf_counter()
                log(f"  exporting to OpenVINO IR into {ov_dir} ...")
                exp = SentenceTransformer(str(mdir), device="cpu", backend="openvino")
                if ov_dir.exists():
                    shutil.rmtree(ov_dir)
                exp.save_pretrained(str(ov_dir))
                del exp
                prep_s, note = time.perf_counter() - t, "exported in this run"
            import openvino as ov
            caps = ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
            for name, hint in (("OpenVINO f32", "f32"), ("OpenVINO bf16", "bf16")):
                if name not in wanted:
                    continue
                try:
                    kw = {"ov_config": {"INFERENCE_PRECISION_HINT": hint, "INFERENCE_NUM_THREADS": str(args.threads)}}
                    st, s = timed_load(lambda: SentenceTransformer(str(ov_dir), device="cpu", backend="openvino",
                                                                   model_kwargs=kw))
                    r = STRow(name, st, bs)
                    r.load_s = s
                    r.prep_s, r.prep_note = prep_s, f"IR export: {note}"
                    try:
                        cm = st[0].auto_model.request
                        got = re.sub(r"<Type: '(\w+)'>", r"\1", str(cm.get_property("INFERENCE_PRECISION_HINT")))
                        thr = cm.get_property("INFERENCE_NUM_THREADS")
                        r.path = f"CPU plugin, inference precision {got} (asked {hint}), {thr} threads; CPU capabilities {' '.join(caps)}"
                    except Exception as e:  # noqa: BLE001
                        r.path = f"CPU plugin (precision not readable: {e}); capabilities {' '.join(caps)}"
                    rows[name] = r
                except Exception as e:  # noqa: BLE001
                    rows[name] = failed(name, e)
        except Exception as e:  # noqa: BLE001
            for name in ("OpenVINO f32", "OpenVINO bf16"):
                if name in wanted:
                    rows[name] = failed(name, e)

    # OpenVINO on the same ONNX export, through the openvino package alone (optimum-intel pins an old
    # transformers; a user can run the model's ONNX file with openvino and nothing else).
    ov_onnx_rows = [n for n in ("OpenVINO f32 (ONNX)", "OpenVINO bf16 (ONNX)") if n in wanted]
    if ov_onnx_rows:
        try:
            prep_s, note = export_onnx(mdir, onnx_dir)
            import openvino as ov
            from transformers import AutoTokenizer
            core = ov.Core()
            caps = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
            pooling, normalize = pooling_of(mdir)
            tok = AutoTokenizer.from_pretrained(str(mdir))
            sb = json.loads((mdir / "sentence_bert_config.json").read_text())
            for n in ov_onnx_rows:
                hint = "bf16" if "bf16" in n else "f32"
                try:
                    cfg = {"INFERENCE_PRECISION_HINT": hint, "INFERENCE_NUM_THREADS": str(args.threads)}
                    cm, s = timed_load(lambda: core.compile_model(str(onnx_dir / "onnx" / "model.onnx"), "CPU", cfg))
                    r = OVOnnxRow(n, cm, tok, sb.get("max_seq_length", 512), pooling, normalize, bs)
                    r.load_s = s
                    r.prep_s, r.prep_note = prep_s, f"ONNX export (optimum-onnx, shared with ONNX Runtime): {note}"
                    got = re.sub(r"<Type: '(\w+)'>", r"\1", str(cm.get_property("INFERENCE_PRECISION_HINT")))
                    r.path = (f"openvino {ov.__version__} alone, Core.compile_model(model.onnx), inference precision "
                              f"{got} (asked {hint}), {cm.get_property('INFERENCE_NUM_THREADS')} threads; CPU "
                              f"capabilities {' '.join(caps)}")
                    rows[n] = r
                except Exception as e:  # noqa: BLE001
                    rows[n] = failed(n, e)
        except Exception as e:  # noqa: BLE001
            for n in ov_onnx_rows:
                rows[n] = failed(n, e)

    # CTranslate2: its transformers converter, if it has an encoder for this architecture.
    if {"CTranslate2 fp32", "CTranslate2 int8"} & wanted:
        names = [n for n in ("CTranslate2 fp32", "CTranslate2 int8") if n in wanted]
        try:
            import ctranslate2
            from ctranslate2.converters import transformers as ct2t
            from transformers import AutoConfig, AutoTokenizer
            config = AutoConfig.from_pretrained(str(mdir))
            loader = ct2t._MODEL_LOADERS.get(type(config).__name__)
            reason = None
            if loader is None:
                reason = (f"CTranslate2 {ctranslate2.__version__} has no converter for {type(config).__name__} "
                          f"({config.model_type})")
            elif not loader.architecture_name.endswith("Model") or "CausalLM" in loader.architecture_name:
                reason = (f"CTranslate2 {ctranslate2.__version__} converts {type(config).__name__} only as "
                          f"{loader.architecture_name}, a Generator (no ctranslate2.Encoder, no hidden states)")
            if reason:
                for n in names:
                    rows[n] = unsupported(n, reason)
            else:
                ct2_dir = cache / "ctranslate2"
                prep_s, note = None, "cached"
                if not (ct2_dir / "model.bin").exists():
                    t = time.perf_counter()
                    log(f"  converting to CTranslate2 into {ct2_dir} ...")
                    ctranslate2.converters.TransformersConverter(str(mdir)).convert(str(ct2_dir), force=True)
                    prep_s, note = time.perf_counter() - t, "converted in this run"
                pooling, normalize = pooling_of(mdir)
                tok = AutoTokenizer.from_pretrained(str(mdir))
                sb = json.loads((mdir / "sentence_bert_config.json").read_text())
                isa = ct2_path(ct2_dir, args.threads)
                for n in names:
                    ctype = "int8" if n.endswith("int8") else "float32"
                    try:
                        enc, s = timed_load(lambda: ctranslate2.Encoder(str(ct2_dir), device="cpu", compute_type=ctype,
                                                                        intra_threads=args.threads, inter_threads=1))
                        r = CT2Row(n, enc, tok, sb.get("max_seq_length", 512), pooling, normalize, bs)
                        r.load_s = s
                        r.prep_s, r.prep_note = prep_s, f"conversion (fp32 weights; int8 quantised at load): {note}"
                        r.path = f"compute_type {enc.compute_type}; {isa}"
                        rows[n] = r
                    except Exception as e:  # noqa: BLE001
                        rows[n] = failed(n, e)
        except Exception as e:  # noqa: BLE001
            for n in names:
                rows[n] = failed(n, e)
    return rows


# --- statistics ---------------------------------------------------------------------------------------

def cosines(a, b):
    a, b = a.astype(np.float64), b.astype(np.float64)
    return (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-30)


def round_robin(runners, rounds, gap, min_seconds=0.0, errors=None):
    """runners: name -> callable() returning seconds. Every round runs each once, in an order rotated
    by one each round; at least `rounds` rounds, and until each has min_seconds in all. A runner that
    raises leaves the rotation (its error in errors[name]); the others go on."""
    names = list(runners)
    times = {n: [] for n in names}
    errors = {} if errors is None else errors
    r = 0
    while names and (r < rounds or any(sum(times[n]) < min_seconds for n in names)):
        k = r % len(names)
        for n in names[k:] + names[:k]:
            try:
                times[n].append(runners[n]())
            except Exception as e:  # noqa: BLE001
                traceback.print_exc(file=sys.stderr)
                errors[n] = f"failed while timed: {type(e).__name__}: {str(e)[:300]}"
                names.remove(n)
            time.sleep(gap)
        r += 1
    return times


# --- engine level ---------------------------------------------------------------------------------------

class EngineBench:
    """orchid_engine_bench --interactive: one timed run per case name written to it."""

    def __init__(self, args, mdir, ids_path, dtype, log_path):
        self.log_path = log_path
        self.logf = open(log_path, "w")
        env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), OPENBLAS_NUM_THREADS=str(args.threads))
        self.proc = subprocess.Popen([args.bench_bin, "--model", str(mdir), "--ids", str(ids_path),
                                      "--threads", str(args.threads), "--warmup", str(args.warmup),
                                      "--dtype", dtype, "--interactive"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.logf, text=True,
                                     env=env)
        self.first = {}
        self.logs = []

    def run(self, case):
        self.proc.stdin.write(case + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"orchid_engine_bench exited ({self.proc.wait()}): {self.stderr()[-600:]}")
            if line.startswith("{"):
                break
            self.logs.append(re.sub(r"^\[[^\]]*\] \[\w+\] ", "", line.strip()))  # a log line on stdout
        r = json.loads(line)
        if "first_embedding" in r:
            self.first[case] = np.array(r["first_embedding"], dtype=np.float64)
        return r["ms"] / 1000

    def stderr(self):
        if not self.logf.closed:
            self.logf.flush()
        return Path(self.log_path).read_text(errors="replace")

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        except Exception:  # noqa: BLE001
            self.proc.kill()
        self.logf.close()


def engine_cases(tok_json, texts, batch, length, n):
    """n batches of `batch` sequences of exactly `length` tokens: the texts' token stream (no special
    tokens) cut into pieces, each wrapped in the model's own special tokens (its post-processor's)."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(tok_json))
    tok.no_truncation()
    tok.no_padding()
    plain = tok.encode("hello world", add_special_tokens=False).ids
    full = tok.encode("hello world").ids
    i = next((k for k in range(len(full)) if full[k:k + len(plain)] == plain), 0)
    prefix, suffix = full[:i], full[i + len(plain):]
    stream = []
    for enc in tok.encode_batch(texts, add_special_tokens=False):
        stream.extend(enc.ids)
    body = length - len(prefix) - len(suffix)
    while len(stream) < body * batch * n + 1:
        stream = stream + stream
    cases, off = [], 0
    for c in range(n):
        seqs = []
        for _ in range(batch):
            seqs.append(prefix + stream[off:off + body] + suffix)
            off += body
        cases.append({"name": f"c{c}_b{batch}_l{length}", "batch": batch, "length": length, "seqs": seqs})
    return cases


def st_forward(st):
    import torch
    names = set(st.tokenizer.model_input_names)

    def run(seqs):
        ids = torch.tensor(seqs, dtype=torch.long)
        feats = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
        if "token_type_ids" in names:
            feats["token_type_ids"] = torch.zeros_like(ids)
        with torch.inference_mode():
            return st(feats)["sentence_embedding"].float()[0].numpy().astype(np.float64)
    return run


def engine_level(args, mdir, texts, peers, tmp):
    cases = engine_cases(mdir / "tokenizer.json", texts, args.engine_batch, args.engine_length, args.engine_cases)
    ids_path = Path(tmp) / "engine-ids.jsonl"
    ids_path.write_text("".join(json.dumps({"name": c["name"], "seqs": c["seqs"]}) + "\n" for c in cases))
    out = {"cases": [{k: c[k] for k in ("name", "batch", "length")} for c in cases], "rows": {}}
    benches, torch_runs = {}, {}
    try:
        for name, dt in ORCHID_ROWS:
            if name in args.row_set and not dt.endswith("-kept"):  # (the engine has no start-up)
                benches[name] = EngineBench(args, mdir, ids_path, dt, Path(tmp) / f"engine-{dt}.log")
        for name in ("PyTorch fp32", "PyTorch bf16"):
            if name in peers and peers[name].status == "ok":
                torch_runs[name] = st_forward(peers[name].st)
        first = {n: {} for n in list(benches) + list(torch_runs)}
        times = {n: [] for n in first}
        for c in cases:
            runners = {}
            for n, b in benches.items():
                runners[n] = (lambda b=b, c=c: b.run(c["name"]))
            for n, f in torch_runs.items():
                for _ in range(max(1, args.warmup)):
                    first[n][c["name"]] = f(c["seqs"])

                def timed(f=f):
                    t = time.perf_counter()
                    f(c["seqs"])
                    return time.perf_counter() - t
                runners[n] = timed
            log(f"  engine level {c['name']}: {', '.join(runners)} in round robin ...")
            errors = {}
            got = round_robin(runners, args.runs, args.gap, args.engine_min_seconds, errors)
            if errors:
                raise RuntimeError("; ".join(f"{n}: {e}" for n, e in errors.items()))
            for n, ts in got.items():
                times[n].append(ts)
            for n, b in benches.items():
                first[n][c["name"]] = b.first[c["name"]]
        for n in first:
            per_case = times[n]
            all_s = [t for ts in per_case for t in ts]
            ref = first.get(REFERENCE, {})
            cos = [float(first[n][c["name"]] @ ref[c["name"]] / (np.linalg.norm(first[n][c["name"]]) *
                                                                  np.linalg.norm(ref[c["name"]])))
                   for c in cases if c["name"] in ref]
            med = statistics.median([statistics.median(ts) for ts in per_case])
            out["rows"][n] = {"median_s_per_batch": med, "seq_per_s": args.engine_batch / med,
                              "runs_s": per_case, "runs": len(all_s),
                              "min_cosine": min(cos) if cos else None,
                              "mean_cosine": float(np.mean(cos)) if cos else None}
        for n, b in benches.items():
            b.close()
            lines = [ln.strip() for ln in b.logs + b.stderr().splitlines()
                     if "--dtype" in ln or "built-in texts" in ln]
            out["rows"][n]["logs"] = lines
        benches = {}
    except Exception as e:  # noqa: BLE001
        traceback.print_exc(file=sys.stderr)
        out["error"] = f"{type(e).__name__}: {e}"
    finally:
        for b in benches.values():
            b.close()
    return out


# --- one model -------------------------------------------------------------------------------------------

def bench_model(name, args, cpu, torch_path):
    override = args.model_dirs.get(name)
    cache_root = Path(args.cache_dir)
    cache_root.mkdir(parents=True, exist_ok=True)
    mdir = model_dir(name, override, cache_root)
    if args.workload == "docs":
        texts = held_out_docs(args.texts or (8 if args.quick else 64), mdir / "tokenizer.json")
    else:
        texts = held_out_texts(args.texts or (48 if args.quick else MODELS.get(name, (None, 200))[1]))
    cache = cache_root / f"{name}-{fingerprint(mdir)}"
    cache.mkdir(parents=True, exist_ok=True)
    log(f"{name}: {len(texts)} texts, model {mdir}, peer cache {cache}")
    res = {"model": name, "dir": str(mdir), "what": MODELS.get(name, (None, 0, str(mdir)))[2],
           "texts": len(texts), "rows": {}, "engine": None}
    with tempfile.TemporaryDirectory(prefix="int8-peers-") as tmp:
        src = Path(tmp) / "texts.jsonl"
        src.write_text("".join(json.dumps(t) + "\n" for t in texts), encoding="utf-8")
        rows = {}
        for rname, dt in ORCHID_ROWS:
            if rname in args.row_set:
                rows[rname] = OrchidEmbed(rname, dt, args, mdir, src, tmp)
        peers = make_peers(mdir, cache, args, cpu, args.row_set)
        for p in peers.values():
            if isinstance(p, (STRow, PooledRow)):
                p.texts = texts
            if p.name == "PyTorch fp32" and p.status == "ok":
                p.path = torch_path.get("fp32", "")
            if p.name == "PyTorch bf16" and p.status == "ok":
                p.path = torch_path.get("bf16", "")
        rows.update(peers)
        order = [r for r in ALL_ROWS if r in rows]

        # Warm-up, untimed: each row's embeddings, for the cosines.
        for rname in order:
            r = rows[rname]
            if r.status != "ok":
                continue
            log(f"  warm-up {rname} ...")
            try:
                r.emb = r.run()
            except Exception as e:  # noqa: BLE001
                r.status = failed(rname, e).status
        ref = rows.get(REFERENCE)
        ref_emb = ref.emb if ref is not None and ref.status == "ok" else None

        live = [n for n in order if rows[n].status == "ok"]

        def timer(r):
            def f():
                t = time.perf_counter()
                r.run()
                return time.perf_counter() - t
            return f
        if not args.check_only and live:
            log(f"  timing {len(live)} rows, {args.runs} round(s) ...")
            errors = {}
            got = round_robin({n: timer(rows[n]) for n in live}, args.runs, args.gap, errors=errors)
            for n, ts in got.items():
                rows[n].times = [] if n in errors else ts
            for n, e in errors.items():
                rows[n].status = e

        for rname in order:
            r = rows[rname]
            d = {"status": r.status, "path": r.path, "load_s": r.load_s, "prep_s": r.prep_s,
                 "prep_note": r.prep_note, "logs": r.logs, "runs_s": r.times}
            if r.times:
                d["median_s"] = statistics.median(r.times)
                d["texts_per_s"] = len(texts) / d["median_s"]
            if r.emb is not None and ref_emb is not None:
                if r.emb.shape != ref_emb.shape:
                    d["status"] = f"failed: embeddings of shape {r.emb.shape}, reference {ref_emb.shape}"
                else:
                    c = cosines(r.emb, ref_emb)
                    d["min_cosine"], d["mean_cosine"] = float(c.min()), float(c.mean())
                    d["worst_text"] = int(c.argmin())
            res["rows"][rname] = d

        # Only PyTorch stays loaded for the engine level.
        for n in list(peers):
            if n not in ("PyTorch fp32", "PyTorch bf16"):
                peers[n].st = peers[n].encoder = peers[n].compiled = peers[n].request = None
        gc.collect()
        if args.engine and not args.check_only:
            res["engine"] = engine_level(args, mdir, texts, peers, tmp)
        for r in rows.values():
            r.close()
        del rows, peers
        gc.collect()
    import resource
    res["driver_peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    return res


# --- report -------------------------------------------------------------------------------------------

def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "–"


def num(v, spec):
    return format(v, spec) if v is not None else "–"


def fmt_cos(v):
    return f"{v:.6f}" if v is not None else "–"


def markdown(result, argv):
    title = ("# int8 at reference fidelity: orchid fp32 / bf16 / int8 against CPU peers (issue 31)"
             if result.get("workload", "short") == "short" else
             "# Long documents: orchid fp32 / bf16 / int8 against CPU peers (issue 44)")
    L = [title, "",
         f"- machine: {result['machine']}",
         f"- commit: {result['commit']} ({result['dirty']})",
         f"- date: {result['date']}",
         f"- threads: {result['threads']} everywhere (torch.set_num_threads, ORT intra-op, OpenVINO "
         "INFERENCE_NUM_THREADS, CTranslate2 intra_threads, orchid --threads)",
         "- versions: " + ", ".join(f"{k} {v}" for k, v in result["versions"].items()),
         f"- PyTorch kernels: fp32 {result['torch_path'].get('fp32')}; bf16 {result['torch_path'].get('bf16')} "
         f"(oneDNN ISA: {result['torch_path'].get('onednn_isa')}; ATen CPU capability "
         f"{result['torch_path'].get('cpu_capability')})",
         (f"- texts: English STS-B train sentences, deduplicated, those in the tests' fixtures removed, seeded "
          f"shuffle (held out from the tests, which read the test split); truncated at the model's maximum"
          if result.get("workload", "short") == "short" else
          "- texts: documents of 300-512 tokens (each one's length drawn uniformly, seeded) made of the first "
          "sentences of English STS-B train pairs in file order, deduplicated, the tests' sentences removed "
          "(held out from the tests); truncated at the model's maximum as a passage would be"),
         f"- method: one untimed warm-up run per row (its embeddings give the cosines: every text against "
         f"PyTorch fp32 sentence-transformers), then {result['runs']} timed round(s), every row once per round "
         f"in a rotated order, {result['gap']} s idle between runs; median; texts/s = texts / median",
         "- orchid rows: the whole `orchid embed` process, wall clock (start, load, int8 calibration, JSONL in, "
         "tokenize, engine, .npy out); Python rows: encode() alone on a loaded model (load and export shown apart)",
         "- host load average (1 / 5 / 15 min): before " + " / ".join(f"{x:.2f}" for x in result["loadavg_before"])
         + ", after " + " / ".join(f"{x:.2f}" for x in result["loadavg_after"])
         + f" ({result['cpu']['cores']} cores: anything else running makes every row noisier, the "
         "multi-threaded ones most)",
         f"- made by `{' '.join(argv)}`", ""]
    for m in result["models"]:
        L += [f"## {m['model']}", "", f"{m['what']}; {m['texts']} texts; directory `{m['dir']}`; the Python "
              f"driver's peak RSS so far {m.get('driver_peak_rss_gb', 0):.1f} GB (every peer of a model is "
              "loaded at once, for the round robin)", ""]
        rows = m["rows"]
        base = rows.get(REFERENCE, {}).get("texts_per_s")
        obf = rows.get("orchid bf16", {}).get("texts_per_s")
        L += ["### Whole process (orchid) / encode() (peers)", "",
              "| row | runs (s) | median s | texts/s | vs PyTorch fp32 | vs orchid bf16 | min cos | mean cos | "
              "load s | export s | status |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
        for n, d in rows.items():
            tps = d.get("texts_per_s")
            runs = ", ".join(f"{x:.2f}" for x in d.get("runs_s") or []) or "–"
            L.append(f"| {n} | {runs} | {num(d.get('median_s'), '.2f')} | {num(tps, '.1f')} | {ratio(tps, base)} | "
                     f"{ratio(tps, obf)} | {fmt_cos(d.get('min_cosine'))} | {fmt_cos(d.get('mean_cosine'))} | "
                     f"{num(d.get('load_s'), '.2f')} | {num(d.get('prep_s'), '.1f')} | {d['status']} |")
        L += ["", "Engine paths and logs:", ""]
        for n, d in rows.items():
            if d.get("path") or d.get("logs"):
                extra = "".join(f"; `{x}`" for x in d.get("logs") or [] if x not in (d.get("path") or ""))
                L.append(f"- {n}: {d.get('path') or ''}{extra}")
        e = m.get("engine")
        if e:
            L += ["", f"### Engine level: same pre-tokenized batches ({', '.join(c['name'] for c in e['cases'])}), "
                  "orchid_engine_bench --interactive vs sentence-transformers forward on PyTorch", ""]
            if e.get("error"):
                L.append(f"engine level failed: {e['error']}")
            er = e.get("rows", {})
            eb = er.get(REFERENCE, {}).get("seq_per_s")
            ebf = er.get("orchid bf16", {}).get("seq_per_s")
            L += ["| row | runs | median s per batch | seq/s | vs PyTorch fp32 | vs orchid bf16 | "
                  "cos vs PyTorch fp32, first sequence of each batch: min | mean |",
                  "|---|---|---|---|---|---|---|---|"]
            for n, d in er.items():
                L.append(f"| {n} | {d['runs']} | {d['median_s_per_batch']:.3f} | {d['seq_per_s']:.2f} | "
                         f"{ratio(d['seq_per_s'], eb)} | {ratio(d['seq_per_s'], ebf)} | {fmt_cos(d['min_cosine'])} | "
                         f"{fmt_cos(d['mean_cosine'])} |")
            logs = [(n, x) for n, d in er.items() for x in d.get("logs") or []]
            if logs:
                L += [""] + [f"- {n}: `{x}`" for n, x in logs]
        L.append("")
    return "\n".join(L) + "\n"


def draw(base, result):
    try:
        from plots import meta_line, pyplot, save
        plt = pyplot()
    except ImportError as e:
        log(f"plots: no matplotlib ({e}); no PNG")
        return None
    models = result["models"]
    fig, axes = plt.subplots(len(models), 3, figsize=(15, 0.8 + 3.4 * len(models)), squeeze=False)
    for i, m in enumerate(models):
        a, b, c = axes[i]
        rows = [(n, d) for n, d in m["rows"].items()]
        names = [n for n, _ in rows]
        tps = [d.get("texts_per_s") or 0 for _, d in rows]
        colors = [("C3" if n.startswith("orchid") else "C0" if n.startswith("PyTorch") else
                   "C2" if n.startswith("ONNX") else "C4" if n.startswith("OpenVINO") else "C1") for n in names]
        ys = range(len(names))
        bars = a.barh(ys, tps, color=colors)
        ref_tps = m["rows"].get(REFERENCE, {}).get("texts_per_s")
        for bar, (n, d), v in zip(bars, rows, tps):
            label = (f"{v:.0f}" + (f"  ({v / ref_tps:.2f}x)" if ref_tps else "")) if v else d["status"][:60]
            a.annotate(label, (v, bar.get_y() + bar.get_height() / 2), va="center", fontsize=6,
                       xytext=(2, 0), textcoords="offset points")
        a.set_yticks(list(ys))
        a.set_yticklabels(names)
        a.invert_yaxis()
        a.set_xlabel("texts/s (orchid: whole process; peers: encode()); (x PyTorch fp32)")
        a.set_title(f"{m['model']}: {m['texts']} texts")
        a.set_xlim(0, max(tps + [1]) * 1.35)
        # fidelity: 1 - cosine, log
        mins = [1 - d["min_cosine"] if d.get("min_cosine") is not None else np.nan for _, d in rows]
        means = [1 - d["mean_cosine"] if d.get("mean_cosine") is not None else np.nan for _, d in rows]
        yy = np.arange(len(names))
        c.barh(yy - 0.2, [max(v, 1e-9) for v in mins], 0.4, color="C3", label="1 − min cosine")
        c.barh(yy + 0.2, [max(v, 1e-9) for v in means], 0.4, color="C7", label="1 − mean cosine")
        c.set_xscale("log")
        c.set_yticks(list(yy))
        c.set_yticklabels(names)
        c.invert_yaxis()
        c.set_xlim(5e-10, 1)
        c.axvline(1e-3, color="black", lw=0.6, ls=":")
        c.axvline(5e-3, color="black", lw=0.6, ls="--")
        c.set_xlabel("1 − cosine vs PyTorch fp32 (log; dotted 0.999, dashed 0.995)")
        c.set_title("fidelity, every text")
        c.legend(loc="upper right", framealpha=0.9)
        e = (m.get("engine") or {}).get("rows") or {}
        if e:
            en = list(e)
            ev = [e[n]["seq_per_s"] for n in en]
            eb = e.get(REFERENCE, {}).get("seq_per_s")
            bars = b.barh(range(len(en)), ev, color=["C3" if n.startswith("orchid") else "C0" for n in en])
            for bar, v in zip(bars, ev):
                b.annotate(f"{v:.1f}" + (f"  ({v / eb:.2f}x)" if eb else ""),
                           (v, bar.get_y() + bar.get_height() / 2), va="center", fontsize=6, xytext=(2, 0),
                           textcoords="offset points")
            b.set_yticks(range(len(en)))
            b.set_yticklabels(en)
            b.invert_yaxis()
            b.set_xlim(0, max(ev) * 1.35)
            cs = m["engine"]["cases"]
            b.set_xlabel(f"sequences/s, engine only ({len(cs)} x {cs[0]['batch']} x {cs[0]['length']} tokens)")
            b.set_title("engine level")
        else:
            b.set_axis_off()
    meta = meta_line(base + ".json", {k: result[k] for k in ("machine", "commit", "date")})
    return save(fig, "int8 at reference fidelity: orchid vs CPU peers (issue 31)", base + ".png", meta)


# --- main ---------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated, of " + ", ".join(MODELS) + "; NAME=DIR uses DIR for NAME")
    ap.add_argument("--rows", default=",".join(ALL_ROWS), help="subset of rows (PyTorch fp32 always runs: the reference)")
    ap.add_argument("--runs", type=int, default=3, help="timed rounds (whole process) / runs per batch (engine)")
    ap.add_argument("--texts", type=int, default=0, help="texts per model (short: default 2000 / 500 / 200, --quick 48; "
                                                         "docs: 64, --quick 8)")
    ap.add_argument("--workload", choices=("short", "docs"), default="short",
                    help="short: STS-B sentences (~15 tokens); docs: held-out documents of 300-512 tokens "
                         "(held_out_docs), truncated at the model's maximum")
    ap.add_argument("--quick", action="store_true", help="smoke test: 48 texts, 1 run, one small engine batch")
    ap.add_argument("--threads", type=int, default=THREADS_DEFAULT)
    ap.add_argument("--batch-size", type=int, default=32, help="encode() batch size of the Python rows")
    ap.add_argument("--gap", type=float, default=0.3, help="seconds idle between runs (thread pools go to sleep)")
    ap.add_argument("--no-engine", dest="engine", action="store_false", help="leave out the engine level")
    ap.add_argument("--engine-batch", type=int, default=8)
    ap.add_argument("--engine-length", type=int, default=128)
    ap.add_argument("--engine-cases", type=int, default=2, help="distinct batches")
    ap.add_argument("--engine-min-seconds", type=float, default=2.0, help="per row and batch, beside --runs")
    ap.add_argument("--warmup", type=int, default=1, help="engine-level warm-up runs per batch")
    ap.add_argument("--check-peers", metavar="DIR[,DIR]", default="",
                    help="only load every row on these sentence-transformers directories and report status and "
                         "cosines on a few texts (no timing, nothing written)")
    ap.add_argument("--orchid", default=os.environ.get("ORCHID_BIN", str(REPO / "build" / "orchid")))
    ap.add_argument("--bench-bin", default=str(REPO / "build" / "orchid_engine_bench"))
    ap.add_argument("--cache-dir", default=os.environ.get("ORCHID_PEERS_CACHE", "/tmp/orchid-peers-cache"),
                    help="exported / converted peer models (outside the repo)")
    ap.add_argument("--out", default=str(REPO / "bench" / "results"))
    ap.add_argument("--replot", metavar="RESULT.json", help="only redraw the PNG of a result, beside it")
    args = ap.parse_args()
    if args.replot:
        base = str(Path(args.replot).with_suffix(""))
        print(draw(base, json.loads(Path(args.replot).read_text())))
        return
    args.check_only = bool(args.check_peers)
    if args.quick:
        args.runs = 1
        args.engine_cases, args.engine_batch, args.engine_length, args.engine_min_seconds = 1, 2, 32, 0.0
    args.row_set = set(r.strip() for r in args.rows.split(",") if r.strip()) | {REFERENCE}
    bad = args.row_set - set(ALL_ROWS)
    if bad:
        ap.error(f"unknown rows {sorted(bad)}; rows: {', '.join(ALL_ROWS)}")
    args.model_dirs = {}
    names = []
    if args.check_peers:
        for d in args.check_peers.split(","):
            n = Path(d).name
            names.append(n)
            args.model_dirs[n] = d
        args.texts = args.texts or 16
    else:
        for item in args.models.split(","):
            n, _, d = item.partition("=")
            if n not in MODELS and not d:
                ap.error(f"unknown model {n}; models: {', '.join(MODELS)} (or NAME=DIR)")
            names.append(n)
            if d:
                args.model_dirs[n] = d
    for b in (args.orchid, args.bench_bin):
        if not os.access(b, os.X_OK):
            sys.exit(f"{b} is missing: build it first (make build)")

    cpu = cpu_info()
    log(f"machine: {machine_line(cpu)}")
    torch_path = torch_paths(args.threads)
    log(f"PyTorch kernels: {torch_path}")
    started = datetime.datetime.now(datetime.timezone.utc)
    result = {"machine": machine_line(cpu), "cpu": cpu, "commit": commit(), "dirty": dirty_note(),
              "date": started.strftime("%Y-%m-%d %H:%M UTC"), "threads": args.threads, "runs": args.runs,
              "gap": args.gap, "quick": args.quick, "workload": args.workload, "versions": versions(), "torch_path": torch_path,
              "onnx_quantization_config": quant_config_for(cpu), "loadavg_before": os.getloadavg(),
              "models": []}
    for n in names:
        result["models"].append(bench_model(n, args, cpu, torch_path))
    result["loadavg_after"] = os.getloadavg()

    if args.check_only:
        for m in result["models"]:
            print(f"{m['model']} ({m['texts']} texts):")
            for n, d in m["rows"].items():
                print(f"  {n:20s} {d['status']:.120s}  min cos {fmt_cos(d.get('min_cosine'))}  "
                      f"mean {fmt_cos(d.get('mean_cosine'))}  load {d.get('load_s') or 0:.2f} s  {d.get('path', '')[:140]}")
        return
    text = markdown(result, ["python", "bench/cpu/int8_vs_peers.py", *sys.argv[1:]])
    print(text)
    os.makedirs(args.out, exist_ok=True)
    prefix = "int8-peers-" if args.workload == "short" else "long-docs-peers-"
    base = os.path.join(args.out, prefix + started.strftime("%Y%m%d-%H%M%S"))
    Path(base + ".json").write_text(json.dumps(result, indent=1))
    try:
        png = draw(base, result)
        if png:
            text = text.replace("\n## ", f"\n![charts]({Path(png).name})\n\n## ", 1)
            log(f"wrote {png}")
    except Exception:  # noqa: BLE001  (the results are written; a chart bug must not lose them)
        traceback.print_exc(file=sys.stderr)
        log("plots: drawing failed; the .md and .json are written")
    Path(base + ".md").write_text(text)
    log(f"wrote {base}.md and .json")


if __name__ == "__main__":
    main()
