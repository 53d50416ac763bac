#!/usr/bin/env python3
"""Issue 6's CPU benchmark: orchid's CPU engine vs Hugging Face transformers on PyTorch (fp32,
SDPA where transformers has it, else eager (MPNet), the same thread count), same machine, same
run, for full-size random-weight models:

  qwen3-0.6b-causal   Qwen3-0.6B's shape (28 layers, hidden 1024, 16 q / 8 kv heads of 128,
                      SwiGLU 3072, vocab 151936), causal, last-token pooling + L2
  qwen3-0.6b-bidir    the same weights with bidirectional attention (pplx-embed style), mean
  xlmr-base           XLM-RoBERTa-base's shape (12 layers, hidden 768, vocab 250002), mean + L2
  minilm-reranker     a cross-encoder of ms-marco-MiniLM-L-6-v2's shape (6 layers, hidden 384),
                      BertForSequenceClassification, 1 label: the rerank suite (5 / 25 / 50
                      pairs of 512 tokens)
  mpnet-base          all-mpnet-base-v2's shape (MPNetModel: 12 layers, hidden 768, relative
                      position bias), mean + L2
  distilbert-base     DistilBertModel's base shape (6 layers, hidden 768), mean + L2
  qwen2-0.5b          Qwen2-0.5B's shape (24 layers, hidden 896, 14 q / 2 kv heads, q/k/v
                      biases), causal, last token + L2
  llama-360m          SmolLM2-360M's shape (LlamaModel: 32 layers, hidden 960, 15 q / 5 kv heads),
                      causal, last token + L2
  e5-mistral-2layer   e5-mistral-7b-instruct's layer shape (MistralModel: hidden 4096, 32 q / 8 kv
                      heads, SwiGLU 14336, sliding window 4096), 2 of its 32 layers, causal, last
                      token + L2
  modernbert-base     ModernBERT-base's shape (22 layers, hidden 768, GeGLU 1152, a global layer
                      every 3, the others local with window 128), mean + L2
  embeddinggemma      EmbeddingGemma-300M's shape (Gemma3TextModel: 24 layers, hidden 768, 3 q /
                      1 kv heads of 256, bidirectional, local window 512 in 5 of every 6 layers),
                      mean + L2 (without its Dense modules: PyTorch's side pools here)
  nomic-embed-v1.5    nomic-embed-text-v1.5's shape (NomicBertModel: 12 layers, hidden 768, SwiGLU
                      3072, rotary), mean + L2
  gte-base-v1.5       gte-base-en-v1.5's shape (GteModel: 12 layers, hidden 768, GELU-gated 3072,
                      rotary, no token types), CLS + L2
  deberta-v3-reranker a DeBERTa-v3-base cross-encoder (DebertaV2ForSequenceClassification: 12
                      layers, hidden 768, disentangled attention with 256 log buckets, vocab
                      128100), 1 label: the rerank suite (PyTorch eager: no SDPA path)

Each side runs in float32 and, with --dtypes float32,bfloat16, also in bfloat16: orchid's
--dtype bfloat16 (linear-layer weights and inputs rounded to bfloat16, fp32 accumulation, the
rest fp32) against PyTorch with the whole model cast to bfloat16 (oneDNN's AVX512_BF16 GEMMs).
Ratios are against PyTorch fp32 (the issue's peer) and against PyTorch bf16.

Models are made once with transformers' own initialisation (seeded) and cached in
models/bench/. Both sides get the same token ids (random ids: speed does not depend on the
text). Before timing, each first output is checked against PyTorch fp32's (cosine >= 0.99999 for
fp32 embeddings, >= 0.999 for bf16; |logit difference| <= 1e-3 for fp32 scores, <= 5e-2 for bf16).
Timing alternates single runs of the two sides (orchid_engine_bench --interactive keeps the model
loaded between them) until each has >= --min-iters runs and >= --min-seconds, so that a noisy
neighbour's drift lands on both sides alike. Writes Markdown + JSON + a PNG chart to bench/results/.

  .venv-bench/bin/python bench/cpu/families_vs_torch.py [--quick]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "cpu"))
sys.path.insert(0, str(REPO / "tests" / "fixtures" / "models"))
from engine_vs_torch import OrchidRunner, commit, machine, percentiles, time_both  # noqa: E402
from plots import plot_after_run  # noqa: E402  (bench/, on the path from engine_vs_torch)
from build import st_files  # noqa: E402

QWEN3_06B = dict(model_type="qwen3", architectures=["Qwen3Model"], vocab_size=151936, hidden_size=1024,
                 num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                 intermediate_size=3072, hidden_act="silu", max_position_embeddings=40960,
                 rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True,
                 attention_bias=False, use_sliding_window=False)
XLMR_BASE = dict(model_type="xlm-roberta", architectures=["XLMRobertaModel"], vocab_size=250002,
                 hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                 hidden_act="gelu", max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5,
                 pad_token_id=1, bos_token_id=0, eos_token_id=2)
MINILM_RERANKER = dict(model_type="bert", architectures=["BertForSequenceClassification"], vocab_size=30522,
                       hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536,
                       hidden_act="gelu", max_position_embeddings=512, type_vocab_size=2,
                       id2label={"0": "LABEL_0"}, label2id={"LABEL_0": 0})

MPNET_BASE = dict(model_type="mpnet", architectures=["MPNetModel"], vocab_size=30527, hidden_size=768,
                  num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, hidden_act="gelu",
                  max_position_embeddings=514, layer_norm_eps=1e-5, relative_attention_num_buckets=32,
                  pad_token_id=1)
DISTILBERT_BASE = dict(model_type="distilbert", architectures=["DistilBertModel"], vocab_size=30522,
                       dim=768, n_layers=6, n_heads=12, hidden_dim=3072, activation="gelu",
                       max_position_embeddings=512)
QWEN2_05B = dict(model_type="qwen2", architectures=["Qwen2Model"], vocab_size=151936, hidden_size=896,
                 num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                 intermediate_size=4864, hidden_act="silu", max_position_embeddings=32768,
                 rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True,
                 use_sliding_window=False)
# e5-mistral-7b-instruct's layer (MistralModel: hidden 4096, 32 q / 8 kv heads of 128, SwiGLU 14336,
# vocab 32000), 2 of its 32 layers: the same per-layer work, in a model that two cores run in seconds.
E5_MISTRAL_SLICE = dict(model_type="mistral", architectures=["MistralModel"], vocab_size=32000,
                        hidden_size=4096, num_hidden_layers=2, num_attention_heads=32, num_key_value_heads=8,
                        head_dim=128, intermediate_size=14336, hidden_act="silu", max_position_embeddings=32768,
                        rms_norm_eps=1e-5, rope_theta=10000.0, sliding_window=4096, tie_word_embeddings=False)
LLAMA_360M = dict(model_type="llama", architectures=["LlamaModel"], vocab_size=49152, hidden_size=960,
                  num_hidden_layers=32, num_attention_heads=15, num_key_value_heads=5,
                  intermediate_size=2560, hidden_act="silu", max_position_embeddings=8192,
                  rms_norm_eps=1e-5, rope_theta=100000.0, tie_word_embeddings=True)

MODERNBERT_BASE = dict(model_type="modernbert", architectures=["ModernBertModel"], vocab_size=50368,
                       hidden_size=768, num_hidden_layers=22, num_attention_heads=12, intermediate_size=1152,
                       hidden_activation="gelu", max_position_embeddings=8192, local_attention=128,
                       global_attn_every_n_layers=3, pad_token_id=50283)
EMBEDDINGGEMMA = dict(model_type="gemma3_text", architectures=["Gemma3TextModel"], vocab_size=262144,
                      hidden_size=768, num_hidden_layers=24, num_attention_heads=3, num_key_value_heads=1,
                      head_dim=256, intermediate_size=1152, hidden_activation="gelu_pytorch_tanh",
                      max_position_embeddings=2048, query_pre_attn_scalar=256, sliding_window=512,
                      use_bidirectional_attention=True, rms_norm_eps=1e-6)

NOMIC_V15 = dict(model_type="nomic_bert", architectures=["NomicBertModel"], vocab_size=30528, hidden_size=768,
                 num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, hidden_act="silu",
                 max_position_embeddings=8192, type_vocab_size=2, layer_norm_eps=1e-12,
                 rope_parameters={"rope_type": "default", "rope_theta": 1000.0})
GTE_BASE_V15 = dict(model_type="gte", architectures=["GteModel"], vocab_size=30528, hidden_size=768,
                    num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, hidden_act="gelu",
                    max_position_embeddings=8192, type_vocab_size=0, layer_norm_eps=1e-12,
                    rope_parameters={"rope_type": "default", "rope_theta": 500000.0})
DEBERTA_V3_RERANKER = dict(model_type="deberta-v2", architectures=["DebertaV2ForSequenceClassification"],
                           vocab_size=128100, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                           intermediate_size=3072, hidden_act="gelu", max_position_embeddings=512,
                           type_vocab_size=0, layer_norm_eps=1e-7, relative_attention=True,
                           max_relative_positions=-1, position_buckets=256, pos_att_type=["p2c", "c2p"],
                           share_att_key=True, norm_rel_ebd="layer_norm", position_biased_input=False,
                           pooler_hidden_size=768, pooler_hidden_act="gelu", pooler_dropout=0,
                           id2label={"0": "LABEL_0"}, label2id={"LABEL_0": 0})

MODELS = {
    # name: (config, pooling, normalize, kind, bidirectional)
    "qwen3-0.6b-causal": (QWEN3_06B, "lasttoken", True, "embed", False),
    "qwen3-0.6b-bidir": (dict(QWEN3_06B, use_bidirectional_attention=True), "mean", False, "embed", True),
    "xlmr-base": (XLMR_BASE, "mean", True, "embed", False),
    "minilm-reranker": (MINILM_RERANKER, "cls", False, "score", False),
    "mpnet-base": (MPNET_BASE, "mean", True, "embed", False),
    "distilbert-base": (DISTILBERT_BASE, "mean", True, "embed", False),
    "qwen2-0.5b": (QWEN2_05B, "lasttoken", True, "embed", False),
    "llama-360m": (LLAMA_360M, "lasttoken", True, "embed", False),
    "e5-mistral-2layer": (E5_MISTRAL_SLICE, "lasttoken", True, "embed", False),
    "modernbert-base": (MODERNBERT_BASE, "mean", True, "embed", False),
    "embeddinggemma": (EMBEDDINGGEMMA, "mean", True, "embed", False),
    "nomic-embed-v1.5": (NOMIC_V15, "mean", True, "embed", False),
    "gte-base-v1.5": (GTE_BASE_V15, "cls", True, "embed", False),
    "deberta-v3-reranker": (DEBERTA_V3_RERANKER, "cls", False, "score", False),
}


def make_model(name, root):
    import torch
    from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification
    cfg, pooling, normalize, kind, _ = MODELS[name]
    d = root / name
    if (d / "model.safetensors").exists():
        return d
    d.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    config = AutoConfig.for_model(cfg["model_type"], **{k: v for k, v in cfg.items() if k != "model_type"})
    cls = AutoModelForSequenceClassification if kind == "score" else AutoModel
    model = cls.from_config(config)
    model.save_pretrained(d, safe_serialization=True)
    # save_pretrained writes what transformers knows; keep our flags (bidirectional) in config.json.
    c = json.loads((d / "config.json").read_text())
    c.update({k: v for k, v in cfg.items() if k in ("use_bidirectional_attention", "architectures")})
    (d / "config.json").write_text(json.dumps(c, indent=2))
    if kind == "embed":
        st_files(d, pooling, normalize, cfg.get("hidden_size", cfg.get("dim")), 8192)
    return d


def torch_model(name, d, dtype="float32"):
    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification
    _, pooling, normalize, kind, bidir = MODELS[name]
    cls = AutoModelForSequenceClassification if kind == "score" else AutoModel
    try:
        model = cls.from_pretrained(d, dtype=getattr(torch, dtype), attn_implementation="sdpa").eval()
    except ValueError:  # no SDPA path in transformers for this architecture (MPNet): eager
        print(f"{name}: transformers has no SDPA attention for it; PyTorch runs eager attention")
        model = cls.from_pretrained(d, dtype=getattr(torch, dtype), attn_implementation="eager").eval()
    kwargs = {}
    if bidir:  # as pplx-embed's modelling code: no causal mask
        for layer in model.layers:
            layer.self_attn.is_causal = False
        kwargs["attention_mask"] = {"full_attention": None}

    def run(ids):
        x = torch.tensor(ids)
        if kind == "score":
            return model(input_ids=x).logits[:, 0].float()
        h = model(input_ids=x, **kwargs).last_hidden_state.float()
        v = {"mean": h.mean(1), "lasttoken": h[:, -1], "cls": h[:, 0]}[pooling]
        return torch.nn.functional.normalize(v, dim=-1) if normalize else v
    return run


def host_probe(torch, threads, bench_bin):
    """How loaded the host is while the benchmark runs: PyTorch's fp32 GEMM rate at XLM-R-base's
    FFN shape (m = 4096, 768 -> 3072) against `threads` x one core's measured FMA peak
    (orchid_linear_bench --peak, beside the engine bench). On the 2-vCPU EPYC these ratios were
    measured on, PyTorch ran this shape at 78% of peak on a quiet host
    (bench/results/linear-vs-torch-20261202-091142.md) and at 54% on a loaded one
    (-20261201-222340.md), and the model ratios moved with it: PyTorch loses more than orchid
    under load."""
    linear_bin = Path(bench_bin).parent / "orchid_linear_bench"
    peak = None
    if linear_bin.exists():
        peak = json.loads(subprocess.check_output([str(linear_bin), "--peak"], text=True))["peak_gflops"]
    x, w = torch.randn(4096, 768), torch.randn(3072, 768)
    torch.nn.functional.linear(x, w)
    ms = []
    for _ in range(5):
        t0 = time.perf_counter()
        torch.nn.functional.linear(x, w)
        ms.append((time.perf_counter() - t0) * 1000)
    gflops = 2 * 4096 * 768 * 3072 / sorted(ms)[2] / 1e6
    return {"fma_peak_gflops_per_core": peak, "torch_gemm_gflops": gflops,
            "torch_gemm_pct_of_peak": 100 * gflops / (peak * threads) if peak else None}


def probe_text(p):
    pct = f" ({p['torch_gemm_pct_of_peak']:.0f}% of peak)" if p["torch_gemm_pct_of_peak"] else ""
    peak = f"{p['fma_peak_gflops_per_core']:.1f}" if p["fma_peak_gflops_per_core"] else "n/a"
    return f"PyTorch GEMM {p['torch_gemm_gflops']:.0f} GFLOP/s{pct}, FMA peak {peak} GFLOP/s per core"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bench-bin", default=str(REPO / "build" / "orchid_engine_bench"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--min-iters", type=int, default=3)
    ap.add_argument("--min-seconds", type=float, default=2.0)
    ap.add_argument("--embed-shapes", default="1x128,1x512,8x512", help="BATCHxLENGTH list for embedders")
    ap.add_argument("--rerank-shapes", default="5x512,25x512,50x512", help="BATCHxLENGTH list for rerankers")
    ap.add_argument("--gap", type=float, default=0.2,
                    help="seconds idle between runs, so one side's threads are asleep when the other starts")
    ap.add_argument("--dtypes", default="float32", help="float32 and/or bfloat16, both sides")
    ap.add_argument("--out", default=str(REPO / "bench" / "results"))
    args = ap.parse_args()

    import torch
    torch.set_num_threads(args.threads)
    probes = {"before": host_probe(torch, args.threads, args.bench_bin)}
    rng = np.random.default_rng(0)
    root = REPO / "models" / "bench"
    rows, raw = [], []
    for name in args.models.split(","):
        d = make_model(name, root)
        kind = MODELS[name][3]
        spec = args.rerank_shapes if kind == "score" else args.embed_shapes
        shapes = [tuple(int(v) for v in x.split("x")) for x in spec.split(",")]
        cases = [{"name": f"b{b}_l{n}", "batch": b, "length": n,
                  "seqs": rng.integers(1000, 30000, size=(b, n)).tolist()} for b, n in shapes]
        ids_path = root / f"{name}.ids.jsonl"
        ids_path.write_text("".join(json.dumps({"name": c["name"], "seqs": c["seqs"]}) + "\n" for c in cases))
        dtypes = args.dtypes.split(",")
        orchid_ms, orchid_first, torch_ms, torch_first = {}, {}, {}, {}
        for dt in dtypes:
            print(f"{name}: {dt}, orchid and torch alternating ...", file=sys.stderr, flush=True)
            orchid = OrchidRunner(args, d, ids_path, ["--dtype", dt])
            run = torch_model(name, d, dt)
            for c in cases:
                key = dt, c["name"]
                orchid_ms[key], torch_ms[key], torch_first[key] = time_both(orchid, run, c, args)
                orchid_first[key] = orchid.first[c["name"]]
            orchid.close()
            del run
        for c in cases:
            ref = torch_first["float32", c["name"]] if "float32" in dtypes else None
            for dt in dtypes:
                oms = orchid_ms[dt, c["name"]]
                ms = torch_ms[dt, c["name"]]
                fids = {}
                for who, v in (("orchid", orchid_first[dt, c["name"]]), ("torch", torch_first[dt, c["name"]])):
                    if ref is None or (who == "torch" and dt == "float32"):
                        continue
                    if kind == "score":
                        fid = abs(float(v[0]) - float(ref[0]))
                        ok = fid <= (1e-3 if dt == "float32" else 5e-2)
                        fids[who] = (fid, ok, f"|d| {fid:.1e}")
                    else:
                        fid = float(v @ ref / (np.linalg.norm(v) * np.linalg.norm(ref)))
                        ok = fid >= (0.99999 if dt == "float32" else 0.999)
                        fids[who] = (fid, ok, f"cos {fid:.6f}")
                op, tp = percentiles(oms), percentiles(ms)
                o_eps = c["batch"] * len(oms) / (sum(oms) / 1000)
                t_eps = c["batch"] * len(ms) / (sum(ms) / 1000)
                t32 = torch_ms.get(("float32", c["name"]))
                t32_eps = c["batch"] * len(t32) / (sum(t32) / 1000) if t32 else float("nan")
                fid_s = " / ".join(f"{w} {f[2]}" for w, f in fids.items())
                ok = all(f[1] for w, f in fids.items() if w == "orchid")
                rows.append((name, c["name"], dt, op["p50"], o_eps, tp["p50"], t_eps,
                             o_eps / t32_eps, o_eps / t_eps, fid_s, ok))
                raw.append({"model": name, "case": c["name"], "dtype": dt,
                            "fidelity_vs_torch_fp32": {w: f[0] for w, f in fids.items()}, "fidelity_ok": ok,
                            "orchid": {"iters": len(oms), **{k + "_ms": v for k, v in op.items()},
                                       "emb_per_s": o_eps, "ms": oms},
                            "torch": {"iters": len(ms), **{k + "_ms": v for k, v in tp.items()},
                                      "emb_per_s": t_eps, "ms": ms}})
                print(rows[-1], file=sys.stderr, flush=True)

    probes["after"] = host_probe(torch, args.threads, args.bench_bin)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    header = [
        "# CPU engine, model families: orchid vs transformers (PyTorch, SDPA)", "",
        f"- machine: {machine()}", f"- commit: {commit()}", f"- date: {date}",
        f"- threads: {args.threads} on both sides; torch {torch.__version__}",
        "- random-weight models of real sizes (transformers' init, seed 0); engine level: same token ids, "
        "no HTTP, no tokenizer", f"- each case: {args.warmup} warm-up, then single runs alternating orchid / "
        f"PyTorch until each side has >= {args.min_iters} runs and >= {args.min_seconds} s; p50 = median run; "
        "seq/s = sequences over the sum of all runs; ratios are of seq/s",
        "- dtype: both sides in that dtype (orchid bfloat16 = linear layers only; PyTorch bfloat16 = whole model); "
        "fidelity: first output vs PyTorch fp32's",
        f"- host load probe (PyTorch fp32 GEMM at 4096 x 768 -> 3072, {args.threads} threads; see host_probe()): "
        f"before {probe_text(probes['before'])}; after {probe_text(probes['after'])}. The ratios below "
        "are lower on a quiet host (PyTorch near peak) than on a loaded one", "",
        "| model | case | dtype | orchid p50 ms | orchid seq/s | torch p50 ms | torch seq/s | orchid / torch fp32 "
        "| orchid / torch same dtype | fidelity vs torch fp32 |",
        "|---|---|---|---|---|---|---|---|---|---|"]
    lines = [f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.1f} | {r[4]:.2f} | {r[5]:.1f} | {r[6]:.2f} | {r[7]:.2f}x | "
             f"{r[8]:.2f}x | {r[9]}{'' if r[10] else ' FAILED'} |" for r in rows]
    text = "\n".join(header + lines) + "\n"
    print(text)
    os.makedirs(args.out, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    base = os.path.join(args.out, f"cpu-families-{stamp}")
    Path(base + ".md").write_text(text)
    Path(base + ".json").write_text(json.dumps({"machine": machine(), "commit": commit(), "date": date,
                                                "threads": args.threads, "host_probe": probes, "cases": raw},
                                               indent=1))
    print(f"wrote {base}.md and .json", file=sys.stderr)
    plot_after_run(base + ".json")
    if not all(r[10] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
