#!/usr/bin/env python3
"""The Python side of bench/gpu/device-check.sh: random-weight models, PyTorch references and
PyTorch timings for the CUDA engine's device check. Runs where PyTorch + transformers are (the
lent GPU machine; or a CPU with --device cpu and --small, to test this script).

  gpu_check.py make-models --out DIR [--small] [--device cuda|cpu]
      DIR/bert-base            BertModel, BERT-base sized (768 x 12 layers, 12 heads, 3072)
      DIR/xlmr-base            XLMRobertaModel, XLM-R-base sized but for a 30000-token
                               vocabulary (positions offset by padding_idx + 1 = 2)
      DIR/distilbert-base      DistilBertModel, DistilBERT-base sized (768 x 6 layers, 12 heads,
                               3072): an encoder without token types
      DIR/qwen3-0.6b-causal    Qwen3Model, Qwen3-0.6B sized (1024 x 28, 16 q / 8 kv heads of
                               128, 3072), causal
      DIR/qwen3-0.6b-bidir     the same weights, use_bidirectional_attention: true
    Random weights from transformers' own initialisation, saved in bf16 safetensors.
    --small makes tiny versions of the same shapes' families (for testing this script).

  gpu_check.py ids --out FILE --vocab V --lengths 1,7,64 [--seed S]
      One sequence per line, token ids in [1000, min(V, 30000)) (or [3, V) for tiny vocabs:
      never a special token such as XLM-R's padding id 1).

  gpu_check.py torch --model DIR --kind bert|qwen3 [--bidir] --name NAME --pooling mean|last
                     [--ids FILE --ref-out FILE.npy] [--latency 128,512] [--throughput 512,4096x16]
                     [--batch 100] [--compile-latency 128] [--compile-throughput 512,4096x16]
                     [--compile-margin S] [--iters N]
                     [--deadline UNIX_TIME]
      Reference embeddings in PyTorch bf16 (transformers, SDPA) per sequence (batch 1, no
      padding), pooled and L2-normalised; then the engine-level suites for PyTorch eager,
      torch.compile (default mode) throughput with its compile seconds ("compile_s", not in the
      rate) and torch.compile(mode="reduce-overhead") latency, one JSON object per line (same keys as
      orchid_cuda_check). Throughput entries are LEN (batches of --batch) or LENxBATCH.
      Bidirectional Qwen3 uses a plain PyTorch forward over the same modules (transformers'
      Qwen3 is causal); for causal models that forward is also checked against transformers'
      and the cosine printed.

  gpu_check.py compare --ours A.npy --ref B.npy --name NAME [--min-cos 0.999]
      Cosine per row; prints one JSON object; exit status 1 when a row is below --min-cos.

  gpu_check.py peak
      The card's bf16 GEMM rate (torch, 8192^3 on random data), one JSON object.

  gpu_check.py attn [--device cuda|cpu] [--small] [--iters N]
      PyTorch's own rates at the shapes orchid's per-op profile (orchid_cuda_check bench
      --profile) times, one JSON object per line ({"impl": "torch", "suite": "profile-ref",
      "of": "attn"|"matmul"|"elementwise", "model", "label", "ms", "tflops", ...}):
      scaled_dot_product_attention in bf16 (Q, K, V as views of one packed QKV tensor, like
      orchid's; by default and with each backend forced: flash, efficient, cudnn) for BERT-base
      (12 heads of 64, 512 tokens x 100, bidirectional) and Qwen3-0.6B (16 query / 8 kv heads of
      128, 4096 tokens x 16, causal; GQA natively, else K/V repeated), FLOPs 4 len^2 head_dim
      heads per sequence (halved when causal); torch.matmul x @ w^T and F.linear with a bias at
      the BERT-base layer shapes (51200 rows: a whole 100 x 512 batch; 16384: one orchid
      chunk) and Qwen3-0.6B's (16384 rows); exact GELU and add + LayerNorm over a BERT-base
      batch. --small: tiny shapes (to test this script on a CPU).

  gpu_check.py report --jsonl FILE --out FILE.md [--machine TEXT] [--quiet]
      One markdown table from every JSON line (device-check.sh's block lines last). Needs no
      third-party package: device-check.sh runs it after every block.
"""
import argparse
import json
import math
import os
import sys
import time


def parse_ints(s):
    return [int(x) for x in s.split(",") if x.strip()] if s else []


def parse_throughput(s, batch):
    """'512,4096x16' -> [(512, batch), (4096, 16)]."""
    out = []
    for x in (s.split(",") if s else []):
        x = x.strip()
        if x:
            n, _, b = x.partition("x")
            out.append((int(n), int(b) if b else batch))
    return out


# ----------------------------------------------------------------------------- models

def model_specs(small):
    if small:
        bert = dict(vocab_size=1200, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=128, max_position_embeddings=512)
        qwen = dict(vocab_size=1500, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=32, intermediate_size=256,
                    max_position_embeddings=4096)
        xlmr = dict(vocab_size=1200, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=128)
    else:
        bert = dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12,
                    num_attention_heads=12, intermediate_size=3072, max_position_embeddings=512)
        qwen = dict(vocab_size=151669, hidden_size=1024, num_hidden_layers=28,
                    num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                    intermediate_size=3072, max_position_embeddings=40960)
        # XLM-R-base's shape but not its 250002-token vocabulary: the check exercises the
        # architecture (positions from padding_idx + 1), which the vocabulary does not change.
        xlmr = dict(vocab_size=30000, hidden_size=768, num_hidden_layers=12,
                    num_attention_heads=12, intermediate_size=3072)
    # DistilBERT-base (no token-type table): the BERT shapes, half the layers, its own fields.
    distil = dict(vocab_size=bert["vocab_size"], dim=bert["hidden_size"],
                  n_layers=max(1, bert["num_hidden_layers"] // 2),
                  n_heads=bert["num_attention_heads"], hidden_dim=bert["intermediate_size"],
                  max_position_embeddings=512, activation="gelu", sinusoidal_pos_embds=False)
    bert.update(type_vocab_size=2, hidden_act="gelu", layer_norm_eps=1e-12)
    xlmr.update(max_position_embeddings=514, type_vocab_size=1, pad_token_id=1, bos_token_id=0,
                eos_token_id=2, hidden_act="gelu", layer_norm_eps=1e-5)
    qwen.update(rms_norm_eps=1e-6, rope_theta=1000000.0, hidden_act="silu",
                tie_word_embeddings=True, attention_bias=False, use_sliding_window=False)
    return bert, qwen, xlmr, distil


def fix_config(path, updates, drop):
    with open(path) as f:
        cfg = json.load(f)
    for k in drop:
        cfg.pop(k, None)
    cfg.update(updates)
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2)


def make_models(args):
    bert_spec, qwen_spec, xlmr_spec, distil_spec = model_specs(args.small)
    if args.dry_run:
        print(json.dumps({"bert": bert_spec, "qwen3": qwen_spec, "xlmr": xlmr_spec,
                          "distilbert": distil_spec}, indent=2))
        return 0
    import torch
    import transformers
    from transformers import (BertConfig, BertModel, DistilBertConfig, DistilBertModel,
                              Qwen3Config, Qwen3Model, XLMRobertaConfig, XLMRobertaModel)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}", flush=True)

    torch.manual_seed(0)
    os.makedirs(args.out, exist_ok=True)
    dev = torch.device(args.device)

    def encoder(name, make, config_updates):
        """An encoder built by make() on the device, saved in bf16 as DIR/name."""
        t0 = time.time()
        with dev:
            m = make()
        m = m.to(torch.bfloat16)
        d = os.path.join(args.out, name)
        m.save_pretrained(d, safe_serialization=True)
        fix_config(os.path.join(d, "config.json"), config_updates, [])
        print(f"{name}: {sum(p.numel() for p in m.parameters()) / 1e6:.1f}M params, "
              f"{time.time() - t0:.1f}s", flush=True)

    encoder("bert-base", lambda: BertModel(BertConfig(**bert_spec), add_pooling_layer=False),
            {"architectures": ["BertModel"], "position_embedding_type": "absolute"})
    encoder("xlmr-base",
            lambda: XLMRobertaModel(XLMRobertaConfig(**xlmr_spec), add_pooling_layer=False),
            {"architectures": ["XLMRobertaModel"], "model_type": "xlm-roberta",
             "position_embedding_type": "absolute"})
    encoder("distilbert-base", lambda: DistilBertModel(DistilBertConfig(**distil_spec)),
            {"architectures": ["DistilBertModel"], "model_type": "distilbert"})

    t0 = time.time()
    cfg = Qwen3Config(**qwen_spec)
    with dev:
        m = Qwen3Model(cfg)
    # The theta the model really uses (transformers versions store it differently): from the
    # config, checked against the model's inverse frequencies inv_freq[i] = theta^(-2i/d).
    hd = qwen_spec["head_dim"]
    theta = qwen3_theta(cfg)
    inv = m.rotary_emb.inv_freq.double().cpu()
    want = torch.tensor([theta ** (-2.0 * i / hd) for i in range(hd // 2)], dtype=torch.float64)
    assert torch.allclose(inv, want, rtol=1e-5), (theta, inv[:4], want[:4])
    m = m.to(torch.bfloat16)
    for name, bidir in (("qwen3-0.6b-causal", False), ("qwen3-0.6b-bidir", True)):
        d = os.path.join(args.out, name)
        if not bidir:
            m.save_pretrained(d, safe_serialization=True)
        else:
            os.makedirs(d, exist_ok=True)
            src = os.path.join(args.out, "qwen3-0.6b-causal")
            for fn in os.listdir(src):
                if fn != "config.json":
                    target = os.path.join(d, fn)
                    if not os.path.exists(target):
                        os.link(os.path.join(src, fn), target)
            with open(os.path.join(src, "config.json")) as f, \
                    open(os.path.join(d, "config.json"), "w") as g:
                g.write(f.read())
        fix_config(os.path.join(d, "config.json"),
                   {"architectures": ["Qwen3Model"], "model_type": "qwen3",
                    "rope_theta": theta, "head_dim": hd,
                    "use_bidirectional_attention": bidir, "use_sliding_window": False},
                   ["rope_scaling", "rope_parameters", "layer_types", "sliding_window",
                    "max_window_layers"])
    print(f"qwen3: {sum(p.numel() for p in m.parameters()) / 1e6:.1f}M params, "
          f"theta {theta:.0f}, {time.time() - t0:.1f}s", flush=True)
    return 0


def write_ids(args):
    import random
    rng = random.Random(args.seed)
    lo = 1000 if args.vocab > 2000 else 3
    hi = min(args.vocab, 30000) - 1
    with open(args.out, "w") as f:
        for n in parse_ints(args.lengths):
            f.write(" ".join(str(rng.randint(lo, hi)) for _ in range(n)) + "\n")
    return 0


def read_ids(path):
    with open(path) as f:
        return [[int(x) for x in line.split()] for line in f if line.strip()]


# ----------------------------------------------------------------------------- references

def load_model(path, device, dtype):
    import torch
    from transformers import AutoModel
    try:
        m = AutoModel.from_pretrained(path, dtype=dtype, attn_implementation="sdpa")
    except TypeError:
        m = AutoModel.from_pretrained(path, torch_dtype=dtype, attn_implementation="sdpa")
    return m.to(device).eval()


def qwen3_theta(cfg):
    rp = getattr(cfg, "rope_parameters", None) or {}
    return float(getattr(cfg, "rope_theta", None) or rp.get("rope_theta"))


def qwen3_inv_freq(m, device):
    """transformers' default rotary inverse frequencies, in fp32 (never the bf16 copy that
    model.to(bfloat16) makes of the buffer)."""
    import torch
    d = m.config.head_dim
    e = torch.arange(0, d, 2, dtype=torch.int64, device=device).float() / d
    return 1.0 / (qwen3_theta(m.config) ** e)


def qwen3_plain_forward(m, ids, causal):
    """Qwen3 over transformers' modules with our own attention call (SDPA, causal or not).
    ids: [1, n] on the model's device. Returns the final-normed hidden states [1, n, H]."""
    import torch
    import torch.nn.functional as F
    n = ids.shape[1]
    x = m.embed_tokens(ids)
    pos = torch.arange(n, device=ids.device, dtype=torch.float32)
    freqs = pos[:, None] * qwen3_inv_freq(m, ids.device)[None, :]
    emb = torch.cat([freqs, freqs], dim=-1)
    cos = emb.cos().to(x.dtype)[None, None]
    sin = emb.sin().to(x.dtype)[None, None]

    def rot(t):
        h = t.shape[-1] // 2
        return torch.cat([-t[..., h:], t[..., :h]], dim=-1)

    for layer in m.layers:
        a = layer.self_attn
        h = layer.input_layernorm(x)
        hd = a.head_dim
        q = a.q_norm(a.q_proj(h).view(1, n, -1, hd)).transpose(1, 2)
        k = a.k_norm(a.k_proj(h).view(1, n, -1, hd)).transpose(1, 2)
        v = a.v_proj(h).view(1, n, -1, hd).transpose(1, 2)
        q = q * cos + rot(q) * sin
        k = k * cos + rot(k) * sin
        rep = q.shape[1] // k.shape[1]
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        x = x + a.o_proj(o.transpose(1, 2).reshape(1, n, -1))
        x = x + layer.mlp(layer.post_attention_layernorm(x))
    return m.norm(x)


def pool(hidden, how):
    import torch
    v = hidden.float().mean(dim=1) if how == "mean" else hidden[:, -1].float()
    return torch.nn.functional.normalize(v, dim=-1)


def cosines(a, b):
    import numpy as np
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    num = (a * b).sum(1)
    den = np.sqrt((a * a).sum(1) * (b * b).sum(1)) + 1e-300
    return num / den


def run_torch(args):
    import numpy as np
    import torch
    dev = torch.device(args.device)
    dtype = torch.bfloat16
    m = load_model(args.model, dev, dtype)
    bidir = args.bidir
    if args.kind == "qwen3":
        # transformers computes RoPE from an fp32 inv_freq buffer; make sure loading in bf16
        # left it fp32 (else positions in the thousands would rotate by wrong angles).
        inv = m.rotary_emb.inv_freq
        if inv.dtype != torch.float32:
            print(f"note: inv_freq was {inv.dtype}; recomputed in fp32", file=sys.stderr)
            m.rotary_emb.inv_freq = qwen3_inv_freq(m, inv.device)
            if hasattr(m.rotary_emb, "original_inv_freq"):
                m.rotary_emb.original_inv_freq = m.rotary_emb.inv_freq

    # Model FLOPs per token (for the throughput rows' share of the GEMM peak): dense layers
    # 2 x non-embedding parameters; attention 4 x layers x (q heads x head_dim) per context token
    # (QK^T and PV), half of it under a causal mask.
    cfg = m.config
    emb = sum(p.numel() for n_, p in m.named_parameters() if "embed" in n_)
    dense = 2 * (sum(p.numel() for p in m.parameters()) - emb)
    q_dim = cfg.num_attention_heads * getattr(cfg, "head_dim", None) if args.kind == "qwen3" \
        else cfg.hidden_size
    attn = 4 * cfg.num_hidden_layers * q_dim * (0.5 if args.kind == "qwen3" and not bidir else 1)
    print(json.dumps({"impl": "model", "model": args.name, "dense_flops_per_token": dense,
                      "attn_flops_per_token_per_ctx": attn}), flush=True)

    def hidden_of(ids):  # ids [B, n]
        if args.kind == "qwen3" and bidir:
            assert ids.shape[0] == 1
            return qwen3_plain_forward(m, ids, causal=False)
        return m(input_ids=ids).last_hidden_state

    def embed(ids):
        return pool(hidden_of(ids), args.pooling)

    # no_grad rather than inference_mode: torch.compile's CUDA graphs (reduce-overhead) are
    # better trodden under no_grad.
    with torch.no_grad():
        if args.ids:
            rows, plain_cos = [], []
            for seq in read_ids(args.ids):
                t = torch.tensor([seq], device=dev)
                e = embed(t)
                rows.append(e.cpu().numpy()[0])
                if args.kind == "qwen3" and not bidir:
                    p = pool(qwen3_plain_forward(m, t, causal=True), args.pooling)
                    plain_cos.append(float(cosines(e.cpu().numpy(), p.cpu().numpy())[0]))
            np.save(args.ref_out, np.stack(rows).astype(np.float32))
            if plain_cos:
                print(json.dumps({"impl": "check", "what": "plain-forward-vs-transformers",
                                  "model": args.name, "min_cos": min(plain_cos)}), flush=True)

        vocab = m.config.vocab_size
        lo, hi = (1000, min(vocab, 30000)) if vocab > 2000 else (1, vocab)
        g = torch.Generator().manual_seed(1)

        def rand_ids(b, n):
            return torch.randint(lo, hi, (b, n), generator=g)

        def latency(fn, impl, n, iters):
            inputs = [rand_ids(1, n) for _ in range(4)]
            for i in range(5):  # compile, warm-up and CUDA-graph recording for compiled fns
                fn(inputs[i % 4].to(dev)).cpu()
            if dev.type == "cuda":
                torch.cuda.synchronize()
            ms = []
            for i in range(iters):
                t0 = time.perf_counter()
                fn(inputs[i % 4].to(dev)).cpu()  # includes the copies, as orchid's does
                ms.append((time.perf_counter() - t0) * 1e3)
            ms.sort()

            def pct(p):
                return ms[min(len(ms) - 1, int(p / 100 * (len(ms) - 1) + 0.5))]
            print(json.dumps({"impl": impl, "suite": "latency", "len": n, "batch": 1,
                              "iters": iters, "p50_ms": pct(50), "p90_ms": pct(90),
                              "p99_ms": pct(99), "max_ms": ms[-1]}), flush=True)

        def throughput(fn, impl, n, batch, batches, report_warmup=False):
            inputs = [rand_ids(batch, n) for _ in range(2)]
            w0 = time.perf_counter()
            fn(inputs[0].to(dev)).cpu()  # torch.compile compiles here: not timed, reported
            if dev.type == "cuda":
                torch.cuda.synchronize()
            warmup = time.perf_counter() - w0
            if report_warmup:  # a second untimed batch: anything left to compile or tune
                fn(inputs[1].to(dev)).cpu()
                if dev.type == "cuda":
                    torch.cuda.synchronize()
            t0 = time.perf_counter()
            for i in range(batches):
                fn(inputs[i % 2].to(dev)).cpu()
            sec = time.perf_counter() - t0
            row = {"impl": impl, "suite": "throughput", "len": n, "batch": batch,
                   "batches": batches, "emb_per_s": batches * batch / sec,
                   "tokens_per_s": batches * batch * n / sec}
            if report_warmup:
                row["compile_s"] = round(warmup, 1)
            print(json.dumps(row), flush=True)

        def out_of_time(margin):
            return args.deadline and time.time() + margin > args.deadline

        eager = f"{args.name}/torch-eager"
        for n in parse_ints(args.latency):
            if out_of_time(20):
                print(json.dumps({"impl": eager, "skipped": f"latency {n}: time budget"}))
                continue
            latency(embed, eager, n, args.iters if n < 4096 else max(5, args.iters // 4))
        for n, b in parse_throughput(args.throughput, args.batch):
            if out_of_time(40):
                print(json.dumps({"impl": eager, "skipped": f"throughput {n}x{b}: time budget"}))
                continue
            if args.kind == "qwen3" and bidir:
                continue  # the plain forward is batch-1 only; timing equals the causal model's
            throughput(embed, eager, n, b, 3 if n * b >= 200000 else 6)

        comp = f"{args.name}/torch-compile"
        # Throughput with torch.compile (default mode, static shapes: what a PyTorch user runs
        # for bulk embedding); compile time excluded from the rate, reported as compile_s.
        thr_c = parse_throughput(args.compile_throughput, args.batch)
        if thr_c and not (args.kind == "qwen3" and bidir):
            compiled_t = torch.compile(embed, dynamic=False)
            for n, b in thr_c:
                if out_of_time(args.compile_margin):
                    print(json.dumps({"impl": comp, "skipped": f"throughput {n}x{b}: time budget"}))
                    continue
                try:
                    throughput(compiled_t, comp, n, b, 3 if n * b >= 200000 else 6,
                               report_warmup=True)
                except Exception as e:  # report, keep the rest of the check going
                    print(json.dumps({"impl": comp, "error": f"throughput {n}x{b}: {e!r}"[:300]}))
        if parse_ints(args.compile_latency):
            compiled = torch.compile(embed, mode="reduce-overhead", dynamic=False)
            for n in parse_ints(args.compile_latency):
                if out_of_time(args.compile_margin):
                    print(json.dumps({"impl": comp, "skipped": f"latency {n}: time budget"}))
                    continue
                t0 = time.time()
                try:
                    latency(compiled, comp, n, args.iters)
                except Exception as e:  # report, keep the rest of the check going
                    print(json.dumps({"impl": comp, "error": f"latency {n}: {e!r}"[:300]}))
                print(f"torch.compile latency {n}: {time.time() - t0:.1f}s incl. compile",
                      file=sys.stderr, flush=True)
    return 0


def gemm_peak(args):
    """bf16 matrix-product rate on random data (8192^3, mean of 10 after 3 warm-ups)."""
    import torch
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(10):
        a @ b
    e1.record()
    torch.cuda.synchronize()
    sec = e0.elapsed_time(e1) / 1e3 / 10
    print(json.dumps({"impl": "peak", "gemm_tflops": 2 * n ** 3 / sec / 1e12,
                      "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}),
          flush=True)
    return 0


def attn_refs(args):
    """PyTorch's attention / GEMM / element-wise rates at the profiled shapes (see the header)."""
    import torch
    import torch.nn.functional as F
    dev = torch.device(args.device)
    dt = torch.bfloat16
    cuda = dev.type == "cuda"
    iters = args.iters or (20 if cuda else 2)
    torch.manual_seed(0)

    def timed(fn):
        """Mean ms of fn() over `iters` calls, after 3 warm-ups."""
        for _ in range(3):
            fn()
        if cuda:
            torch.cuda.synchronize()
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(iters):
                fn()
            e1.record()
            torch.cuda.synchronize()
            return e0.elapsed_time(e1) / iters
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        return (time.perf_counter() - t0) * 1e3 / iters

    def emit(of, model, label, ms, flops=None, **extra):
        r = {"impl": "torch", "suite": "profile-ref", "of": of, "model": model, "label": label,
             "ms": ms, "tflops": flops / (ms * 1e-3) / 1e12 if flops and ms > 0 else None}
        r.update(extra)
        print(json.dumps(r), flush=True)

    with torch.no_grad():
        # --- attention: (model, batch, len, q heads, kv heads, head_dim, causal)
        if args.small:
            cases = [("bert-base", 2, 64, 2, 2, 64, False),
                     ("qwen3-0.6b-causal", 2, 128, 4, 2, 128, True)]
        else:
            cases = [("bert-base", 100, 512, 12, 12, 64, False),
                     ("qwen3-0.6b-causal", 16, 4096, 16, 8, 128, True)]
        backends = [("default", None)]
        if cuda:
            try:
                from torch.nn.attention import SDPBackend, sdpa_kernel
                backends += [(n, (sdpa_kernel, getattr(SDPBackend, b)))
                             for n, b in (("flash", "FLASH_ATTENTION"),
                                          ("efficient", "EFFICIENT_ATTENTION"),
                                          ("cudnn", "CUDNN_ATTENTION"))
                             if hasattr(SDPBackend, b)]
            except ImportError:
                pass
        for model, b, n, hq, hkv, d, causal in cases:
            qkv = torch.randn(b, n, (hq + 2 * hkv) * d, device=dev, dtype=dt)
            q = qkv[..., :hq * d].view(b, n, hq, d).transpose(1, 2)
            k = qkv[..., hq * d:(hq + hkv) * d].view(b, n, hkv, d).transpose(1, 2)
            v = qkv[..., (hq + hkv) * d:].view(b, n, hkv, d).transpose(1, 2)
            k_rep = k.repeat_interleave(hq // hkv, dim=1) if hkv != hq else k
            v_rep = v.repeat_interleave(hq // hkv, dim=1) if hkv != hq else v
            flops = 4.0 * n * n * d * hq * b * (0.5 if causal else 1.0)
            label = f"SDPA h={hq} kv={hkv} d={d}{' causal' if causal else ''}"
            for name, ctx in backends:
                def run(gqa):
                    if gqa:
                        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                                      enable_gqa=True)
                    return lambda: F.scaled_dot_product_attention(q, k_rep, v_rep,
                                                                  is_causal=causal)
                ms, how, err = None, None, None
                for gqa in ([True, False] if hkv != hq else [False]):
                    try:
                        if ctx is None:
                            ms = timed(run(gqa))
                        else:
                            with ctx[0](ctx[1]):
                                ms = timed(run(gqa))
                        how = "native" if gqa else ("repeat" if hkv != hq else "mha")
                        break
                    except Exception as e:  # no such kernel for these inputs (RuntimeError)
                        err = str(e).splitlines()[0][:160] if str(e) else repr(e)
                if ms is None:
                    print(json.dumps({"impl": "torch", "suite": "profile-ref", "of": "attn",
                                      "model": model, "label": f"{label} ({name})",
                                      "unavailable": err}), flush=True)
                    continue
                emit("attn", model, f"{label} ({name})", ms, flops, backend=name, len=n,
                     batch=b, kv=how)
            del qkv, q, k, v, k_rep, v_rep

        # --- GEMMs: y = x w^T, w [n, k] as a Linear's weight (orchid's layout).
        if args.small:
            shapes = [("bert-base", 128, n_, k_) for n_, k_ in ((64, 64), (192, 64), (256, 64),
                                                                (64, 256))]
        else:
            bert = ((768, 768), (2304, 768), (3072, 768), (768, 3072))
            qwen = ((4096, 1024), (1024, 2048), (6144, 1024), (1024, 3072))
            shapes = ([("bert-base", 51200, n_, k_) for n_, k_ in bert] +
                      [("bert-base", 16384, n_, k_) for n_, k_ in bert] +
                      [("qwen3-0.6b-causal", 16384, n_, k_) for n_, k_ in qwen])
        for model, m, n_, k_ in shapes:
            x = torch.randn(m, k_, device=dev, dtype=dt)
            w = torch.randn(n_, k_, device=dev, dtype=dt) * 0.02
            bias = torch.randn(n_, device=dev, dtype=dt)
            flops = 2.0 * m * n_ * k_
            emit("matmul", model, f"matmul m={m} n={n_} k={k_}",
                 timed(lambda: torch.matmul(x, w.t())), flops, m=m, n=n_, k=k_)
            emit("matmul", model, f"linear+bias m={m} n={n_} k={k_}",
                 timed(lambda: F.linear(x, w, bias)), flops, m=m, n=n_, k=k_)
            del x, w, bias

        # --- element-wise work orchid does in its own kernels (BERT-base, one batch).
        m, h, inter = (128, 64, 256) if args.small else (51200, 768, 3072)
        y = torch.randn(m, inter, device=dev, dtype=dt)
        emit("elementwise", "bert-base", f"gelu(erf) m={m} n={inter}",
             timed(lambda: F.gelu(y)), None, m=m, n=inter)
        del y
        a = torch.randn(m, h, device=dev, dtype=dt)
        r = torch.randn(m, h, device=dev, dtype=dt)
        g = torch.ones(h, device=dev, dtype=dt)
        beta = torch.zeros(h, device=dev, dtype=dt)
        emit("elementwise", "bert-base", f"add+layernorm m={m} n={h}",
             timed(lambda: F.layer_norm(a + r, (h,), g, beta, 1e-12)), None, m=m, n=h)
    return 0


def compare(args):
    import numpy as np
    for path in (args.ours, args.ref):
        if not os.path.exists(path):
            print(json.dumps({"impl": "fidelity", "model": args.name, "ok": False,
                              "error": f"{path} missing"}), flush=True)
            return 1
    a, b = np.load(args.ours), np.load(args.ref)
    if a.shape != b.shape:
        print(json.dumps({"impl": "fidelity", "model": args.name, "ok": False,
                          "error": f"shapes {a.shape} vs {b.shape}"}))
        return 1
    c = cosines(a, b)
    ok = bool(np.isfinite(a).all()) and float(c.min()) >= args.min_cos
    print(json.dumps({"impl": "fidelity", "model": args.name, "rows": int(a.shape[0]),
                      "dim": int(a.shape[1]), "min_cos": float(c.min()),
                      "mean_cos": float(c.mean()), "ok": ok}), flush=True)
    return 0 if ok else 1


def profile_tables(rows, peak):
    """The "Per-op profile" section of the report: orchid_cuda_check bench --profile lines
    (suite "profile") per (impl, suite, len, batch), then PyTorch's rates at the same shapes
    (gpu_check.py attn: suite "profile-ref") and the two side by side."""
    import re
    prof = [r for r in rows if r.get("suite") == "profile"]
    refs = [r for r in rows if r.get("suite") == "profile-ref"]
    out = []

    def num(x, fmt):
        if fmt == "tf" and isinstance(x, (int, float)):  # TFLOP/s: whole numbers, unless tiny
            fmt = ".0f" if abs(x) >= 10 else ".2f"
        return format(x, fmt) if isinstance(x, (int, float)) else "-"
    groups = {}
    for r in prof:
        groups.setdefault((r.get("impl"), r.get("of"), r.get("len"), r.get("batch")), []).append(r)
    if groups:
        out += ["", "## Per-op profile (orchid, graphs off: GPU ms per batch)", "",
                "cudaEvents around each op's launches (`orchid_cuda_check bench --profile`); "
                "a Linear's GEMM and the kernels after it are timed apart. Linear TFLOP/s: "
                "2 m n k (m: the bucket's rows); attention: 4 len^2 head_dim heads per sequence "
                "and layer (halved when causal). Share: of the summed op time; wall: submit to "
                "result per batch."]
    for (impl, of, n, b), rs in groups.items():
        tot = next((r for r in rs if r.get("label") == "(all ops)"), None)
        out += ["", f"### {impl}: {of}, {n} tokens x {b}", ""]
        if tot:
            line = (f"wall {num(tot.get('wall_ms'), '.3f')} ms per batch; ops "
                    f"{num(tot.get('ms'), '.3f')} ms in {num(tot.get('passes'), '.0f')} "
                    f"forward pass(es); GEMMs {num(tot.get('gemm_ms'), '.3f')} ms at "
                    f"{num(tot.get('gemm_tflops'), 'tf')} TFLOP/s")
            if peak and isinstance(tot.get("gemm_tflops"), (int, float)):
                line += f" ({100 * tot['gemm_tflops'] / peak:.0f}% of the {peak:.0f} peak)"
            line += (f"; attention {num(tot.get('attn_ms'), '.3f')} ms at "
                     f"{num(tot.get('attn_tflops'), 'tf')} TFLOP/s")
            out += [line, ""]
        # ms per layer: the batch's ms over the calls per forward pass (the layers using the
        # label), comparable with PyTorch's one call over the whole batch below.
        out += ["| label | calls | ms | ms per layer | share | TFLOP/s |",
                "|---|---|---|---|---|---|"]
        for r in rs:
            if r.get("label") == "(all ops)":
                continue
            calls, passes, ms = r.get("calls"), r.get("passes"), r.get("ms")
            per_layer = ms * passes / calls if calls and passes and ms is not None else None
            share = r.get("share")
            out.append(f"| {r.get('label')} | {num(calls, '.0f')} | {num(ms, '.3f')} | "
                       f"{num(per_layer, '.3f')} | "
                       f"{num(100 * share if isinstance(share, (int, float)) else None, '.1f')}% | "
                       f"{num(r.get('tflops'), 'tf')} |")
    if refs:
        out += ["", "## PyTorch at the profiled shapes (gpu_check.py attn; ms per call)", "",
                "| what | model | label | ms | TFLOP/s |", "|---|---|---|---|---|"]
        for r in refs:
            ms = (num(r.get("ms"), ".4f") if "unavailable" not in r
                  else "n/a: " + str(r["unavailable"]).replace("|", "/"))
            out.append(f"| {r.get('of')} | {r.get('model')} | {r.get('label')} | {ms} | "
                       f"{num(r.get('tflops'), 'tf')} |")
    # Side by side, from the throughput profiles: attention rate against SDPA's best backend at
    # the same shape, each GEMM's rate against torch's at its (n, k).
    thr = [(impl, n, b, rs) for (impl, of, n, b), rs in groups.items() if of == "throughput"]
    att_rows, gemm_rows = [], []
    for impl, n, b, rs in thr:
        model = impl.rpartition("/")[0] if "/" in impl else impl
        for r in rs:
            lab = str(r.get("label", ""))
            if lab.startswith("Attention") and ":" not in lab:
                sd = [x for x in refs if x.get("of") == "attn" and x.get("model") == model and
                      x.get("len") == n and x.get("batch") == b and
                      isinstance(x.get("tflops"), (int, float))]
                best = max(sd, key=lambda x: x["tflops"], default=None)
                layers = (r["calls"] / r["passes"]) if r.get("passes") else None
                per_layer = r["ms"] / layers if layers else None
                att_rows.append(
                    f"| {impl} | {n} x {b} | {num(per_layer, '.3f')} | "
                    f"{num(r.get('tflops'), 'tf')} | " + (f"{best['ms']:.3f} ({best.get('backend')}) | {best['tflops']:.0f} | "
                       f"{best['tflops'] / r['tflops']:.2f} |"
                       if best and r.get("tflops") else "- | - | - |"))
            mm = re.match(r"Linear n=(\d+) k=(\d+)([^:]*): gemm$", lab)
            if mm:
                nn, kk = int(mm.group(1)), int(mm.group(2))
                cols = []
                for m_ in (16384, 51200):
                    for kind in ("matmul", "linear+bias"):
                        x = next((x for x in refs if x.get("of") == "matmul" and
                                  x.get("model") == model and x.get("m") == m_ and
                                  x.get("n") == nn and x.get("k") == kk and
                                  str(x.get("label", "")).startswith(kind + " ")), None)
                        cols.append(num(x.get("tflops") if x else None, "tf"))
                gemm_rows.append(f"| {model} | {n} x {b} | {lab[:-len(': gemm')]} | "
                                 f"{num(r.get('ms'), '.3f')} | {num(r.get('tflops'), 'tf')} | "
                                 + " | ".join(cols) + " |")
    if att_rows:
        out += ["", "## Attention: orchid vs PyTorch SDPA (throughput profile)", "",
                "| orchid run | len x batch | orchid ms per layer | orchid TFLOP/s | SDPA best ms | "
                "SDPA TFLOP/s | SDPA / orchid |", "|---|---|---|---|---|---|---|"] + att_rows
    if gemm_rows:
        out += ["", "## GEMMs: orchid (cuBLASLt, bias epilogue) vs torch at the same n, k "
                "(TFLOP/s)", "",
                "| model | len x batch | orchid GEMM | ms per batch | orchid | torch matmul "
                "m=16384 | linear+bias m=16384 | matmul m=51200 | linear+bias m=51200 |",
                "|---|---|---|---|---|---|---|---|---|"] + gemm_rows
    return out


def report(args):
    rows = []
    with open(args.jsonl) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass
    out = [f"# orchid CUDA engine device check", "", f"Machine: {args.machine}", ""]
    fid = [r for r in rows if r.get("impl") == "fidelity"]
    if fid:
        out += ["## Fidelity (cosine vs PyTorch bf16, per embedding; pass >= 0.999)", "",
                "| model | rows | min cos | mean cos | ok |", "|---|---|---|---|---|"]
        out += [f"| {r['model']} | {r.get('rows', '')} | {r.get('min_cos', float('nan')):.6f} | "
                f"{r.get('mean_cos', float('nan')):.6f} | {'yes' if r.get('ok') else 'NO'} |"
                for r in fid]
        out.append("")
    checks = [r for r in rows if r.get("impl") == "check"]
    for r in checks:
        out.append(f"- {r['model']}: {r['what']}: min cos {r['min_cos']:.6f}")
    lat = [r for r in rows if r.get("suite") in ("latency", "sweep")]
    if lat:
        out += ["", "## Batch-1 latency (ms; submit to result on the host)", "",
                "| impl | suite | tokens | p50 | p90 | p99 | max |",
                "|---|---|---|---|---|---|---|"]
        out += [f"| {r['impl']} | {r['suite']} | {r['len']} | {r['p50_ms']:.3f} | "
                f"{r['p90_ms']:.3f} | {r['p99_ms']:.3f} | {r['max_ms']:.3f} |" for r in lat]
    thr = [r for r in rows if r.get("suite") == "throughput"]
    if thr:
        out += ["", "## Throughput (batches of sequences of equal length)", "",
                "| impl | tokens/seq | batch | embeddings/s | tokens/s |", "|---|---|---|---|---|"]
        out += [f"| {r['impl']} | {r['len']} | {r['batch']} | {r['emb_per_s']:.1f} | "
                f"{r['tokens_per_s']:.0f} |" for r in thr]
    # Side by side: per model and length, orchid (lazy graphs) against the others.
    def split(impl):
        model, _, who = impl.rpartition("/")
        return model, who
    lat_by = {}
    for r in lat:
        model, who = split(r["impl"])
        lat_by.setdefault((model, r["len"]), {})[who] = r["p50_ms"]
    if lat_by:
        out += ["", "## Side by side: batch-1 p50 (ms) and ratios (< 1: orchid faster)", "",
                "| model | tokens | orchid lazy | orchid off | off / lazy | torch eager | "
                "torch compile | lazy / eager | lazy / compile |",
                "|---|---|---|---|---|---|---|---|---|"]
        for (model, n), d in sorted(lat_by.items()):
            lazy, off = d.get("orchid-graphs-lazy"), d.get("orchid-graphs-off")
            eag, comp = d.get("torch-eager"), d.get("torch-compile")

            def f(x):
                return f"{x:.3f}" if x is not None else "-"

            def ratio(a, b):
                return f"{a / b:.2f}" if a is not None and b else "-"
            out.append(f"| {model} | {n} | {f(lazy)} | {f(off)} | {ratio(off, lazy)} | {f(eag)} | "
                       f"{f(comp)} | {ratio(lazy, eag)} | {ratio(lazy, comp)} |")
    models = {r["model"]: r for r in rows if r.get("impl") == "model"}
    peak = next((r["gemm_tflops"] for r in rows if r.get("impl") == "peak"), None)
    thr_by = {}
    for r in thr:
        model, who = split(r["impl"])
        thr_by.setdefault((model, r["len"], r["batch"]), {})[who] = r["emb_per_s"]
    if thr_by:
        out += ["", "## Side by side: throughput (embeddings/s; ratio > 1: orchid faster)", "",
                f"Model TFLOP/s count dense + attention FLOPs; the card's bf16 GEMM peak measured "
                f"in this run: {peak:.0f} TFLOP/s." if peak else "",
                "orchid lazy: lazy CUDA graphs, attention on cuDNN where it loaded (own-attn: "
                "ORCHID_CUDNN_ATTENTION=0; lt-gelu: ORCHID_CUDA_GELU=cublaslt); http: orchid serve "
                "+ orchid bench (4 clients); torch compile: default mode, compile time excluded.",
                "",
                "| model | tokens/seq | batch | orchid lazy | orchid off | own-attn | lt-gelu | "
                "http | torch eager | torch compile | lazy / eager | lazy / compile | "
                "http / lazy | orchid TFLOP/s | % of GEMM peak |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for (model, n, b), d in sorted(thr_by.items()):
            lazy, off, eag = (d.get("orchid-graphs-lazy"), d.get("orchid-graphs-off"),
                              d.get("torch-eager"))
            own, ltg, http, comp = (d.get("orchid-graphs-lazy-own"), d.get("orchid-graphs-lazy-ltgelu"),
                                    d.get("orchid-http"), d.get("torch-compile"))
            g = (lambda x: f"{x:.1f}" if x is not None else "-")
            q = (lambda a, c: f"{a / c:.2f}" if a is not None and c else "-")
            rr = f"{q(lazy, eag)} | {q(lazy, comp)} | {q(http, lazy)}"
            tf, pct = "-", "-"
            mi = models.get(model)
            if mi and lazy:
                flops = lazy * n * (mi["dense_flops_per_token"] +
                                    mi["attn_flops_per_token_per_ctx"] * n)
                tf = f"{flops / 1e12:.0f}"
                if peak:
                    pct = f"{100 * flops / 1e12 / peak:.0f}%"
            out.append(f"| {model} | {n} | {b} | {g(lazy)} | {g(off)} | {g(own)} | {g(ltg)} | "
                       f"{g(http)} | {g(eag)} | {g(comp)} | {rr} | {tf} | {pct} |")
        compiles = [r for r in thr if "compile_s" in r]
        if compiles:
            out += ["", "torch.compile seconds (first batch, not in the rates): " +
                    ", ".join(f"{r['impl']} {r['len']}x{r['batch']}: {r['compile_s']}"
                              for r in compiles)]
    out += profile_tables(rows, peak)
    other = [r for r in rows if "skipped" in r or "error" in r]
    if other:
        out += ["", "## Skipped / failed", ""]
        out += [f"- {r.get('impl')}: {r.get('skipped') or r.get('error')}" for r in other]
    # device-check.sh's blocks, in the order they came (last, so that the end of the run's
    # output shows them).
    blocks = [r for r in rows if r.get("impl") == "block"]
    if blocks:
        out += ["", "## Blocks (device-check.sh; seconds as measured in this run)", "",
                "| block | status | seconds | limit s | note |", "|---|---|---|---|---|"]
        out += [f"| {r.get('block')} | {r.get('status')} | {r.get('seconds', '')} | "
                f"{r.get('limit_s', '')} | {str(r.get('note', '')).replace('|', '/')} |"
                for r in blocks]
    text = "\n".join(out) + "\n"
    # Written whole to a temporary file, then renamed: a run killed mid-write leaves the last
    # complete table.
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, args.out)
    if not args.quiet:
        print(text)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("make-models")
    s.add_argument("--out", required=True)
    s.add_argument("--small", action="store_true")
    s.add_argument("--device", default="cuda")
    s.add_argument("--dry-run", action="store_true")
    s.set_defaults(fn=make_models)
    s = sub.add_parser("ids")
    s.add_argument("--out", required=True)
    s.add_argument("--vocab", type=int, required=True)
    s.add_argument("--lengths", required=True)
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(fn=write_ids)
    s = sub.add_parser("torch")
    s.add_argument("--model", required=True)
    s.add_argument("--kind", choices=["bert", "qwen3"], required=True)
    s.add_argument("--bidir", action="store_true")
    s.add_argument("--name", required=True)
    s.add_argument("--pooling", choices=["mean", "last"], default="mean")
    s.add_argument("--ids")
    s.add_argument("--ref-out")
    s.add_argument("--latency", default="")
    s.add_argument("--throughput", default="")
    s.add_argument("--batch", type=int, default=100)
    s.add_argument("--compile-latency", default="")
    s.add_argument("--compile-throughput", default="",
                   help="torch.compile throughput entries (LEN or LENxBATCH), compile excluded")
    s.add_argument("--compile-margin", type=float, default=150,
                   help="seconds before --deadline under which no compile starts")
    s.add_argument("--iters", type=int, default=50)
    s.add_argument("--deadline", type=float, default=0)
    s.add_argument("--device", default="cuda")
    s.set_defaults(fn=run_torch)
    s = sub.add_parser("peak")
    s.set_defaults(fn=gemm_peak)
    s = sub.add_parser("attn")
    s.add_argument("--device", default="cuda")
    s.add_argument("--small", action="store_true")
    s.add_argument("--iters", type=int, default=0, help="timed calls per shape (default 20, "
                   "2 on a CPU)")
    s.set_defaults(fn=attn_refs)
    s = sub.add_parser("compare")
    s.add_argument("--ours", required=True)
    s.add_argument("--ref", required=True)
    s.add_argument("--name", required=True)
    s.add_argument("--min-cos", type=float, default=0.999)
    s.set_defaults(fn=compare)
    s = sub.add_parser("report")
    s.add_argument("--jsonl", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--machine", default="")
    s.add_argument("--quiet", action="store_true", help="write the file, print nothing")
    s.set_defaults(fn=report)
    args = p.parse_args()
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
