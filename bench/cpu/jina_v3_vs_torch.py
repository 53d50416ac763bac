#!/usr/bin/env python3
"""jina-embeddings-v3 with task adapters (issue 32 item 3): orchid's CPU engine against
transformers + PEFT (PyTorch fp32, SDPA), same machine, same run, at jina-embeddings-v3's real
layer shapes with random weights (tests/fixtures/jina_v3/build.py's generator: hidden 1024, 24
layers, 16 heads, fc1 4096, five LoRA adapters of rank 4 on every linear layer and the word
embeddings). The vocabulary is the 16002-row XLM-R test tokenizer's instead of 250002: it only
sizes the embedding table (a lookup), not the compute.

Cases (random token ids, batch x length):
  base   no task: the base model (orchid: no adapter rows; PyTorch: adapters disabled)
  task   every sequence retrieval.query (PyTorch: that adapter active; transformers 5.25's
         set_adapter / disable_adapters want peft >= 0.22, newer than PyPI's 0.21.2, so the
         script makes the same calls on PEFT's LoRA layers itself)
  mixed  the sequences' tasks cycling over the five adapters; orchid runs them as one batch,
         PyTorch (whose transformers-integrated adapters take one active adapter) as five
         one-task sub-batches in a row
The adapter's cost is task / base on each side. Before timing, the first row of each case is
checked against PyTorch's (cosine >= 0.99999). Single runs alternate between the two sides
(orchid_engine_bench --interactive), medians and ratios are reported, with the machine, commit,
date and load averages, to bench/results/jina-v3-cpu-*.md and .json.

  PYTHONPATH=/work/pydeps-jina-v3 .venv-ref-new/bin/python bench/cpu/jina_v3_vs_torch.py
(peft 0.21.2, accelerate, psutil from PyPI in the overlay: see tests/fixtures/jina_v3/make_reference.py)
"""
import argparse
import datetime
import importlib.util
import json
import os
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "cpu"))
from engine_vs_torch import OrchidRunner, commit, machine, percentiles, time_both  # noqa: E402

_spec = importlib.util.spec_from_file_location("jina_build", REPO / "tests" / "fixtures" / "jina_v3" / "build.py")
jina = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(jina)

REAL = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
            matryoshka_dimensions=[32, 64, 128, 256, 512, 768, 1024])


def make_model(root):
    d = root / "jina-v3-real"
    if (d / ".built-1").exists():
        return d
    jina.CONFIG.update(REAL)
    jina.build_dir(d, fused=False)
    (d / ".built-1").write_text("")
    return d


def torch_runner(d, threads):
    import torch
    from transformers import JinaEmbeddingsV3Model
    torch.set_num_threads(threads)
    model = JinaEmbeddingsV3Model.from_pretrained(d, dtype=torch.float32, attn_implementation="sdpa").eval()
    folders = [f for f, _, _ in jina.TASKS]
    for f in folders:
        model.load_adapter(str(d), adapter_name=f, adapter_kwargs={"subfolder": f})

    from peft.tuners.tuners_utils import BaseTunerLayer
    layers = [m for m in model.modules() if isinstance(m, BaseTunerLayer)]

    def use(folder):
        """transformers' set_adapter / disable_adapters, whose peft >= 0.22 gate PyPI's 0.21.2
        does not pass: the same calls on PEFT's layers (None: no adapter)."""
        for m in layers:
            m.enable_adapters(folder is not None)
            if folder is not None:
                m.set_adapter(folder)

    def forward(ids):
        h = model(input_ids=torch.tensor(ids)).last_hidden_state
        return torch.nn.functional.normalize(h.mean(1), dim=-1)

    def run(kind, seqs, adapters):
        if kind == "base":
            use(None)
            return forward(seqs)
        if kind == "task":
            use(folders[0])
            return forward(seqs)
        out = [None] * len(seqs)
        for a in sorted(set(adapters)):
            use(folders[a - 1])
            rows = [i for i, x in enumerate(adapters) if x == a]
            for i, v in zip(rows, forward([seqs[i] for i in rows])):
                out[i] = v
        return torch.stack(out)
    return run, torch.__version__


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bench-bin", default=str(REPO / "build" / "orchid_engine_bench"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--min-iters", type=int, default=3)
    ap.add_argument("--min-seconds", type=float, default=2.0)
    ap.add_argument("--shapes", default="1x128,10x256", help="BATCHxLENGTH list")
    ap.add_argument("--gap", type=float, default=0.2)
    ap.add_argument("--out", default=str(REPO / "bench" / "results"))
    args = ap.parse_args()

    import torch
    root = REPO / "models" / "bench"
    root.mkdir(parents=True, exist_ok=True)
    d = make_model(root)
    rng = np.random.default_rng(0)
    cases = []
    for b, n in (tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")):
        seqs = rng.integers(1000, 16000, size=(b, n)).tolist()
        for kind, adapters in (("base", [0] * b), ("task", [1] * b),
                               ("mixed", [1 + i % 5 for i in range(b)])):
            cases.append({"name": f"{kind}_b{b}_l{n}", "kind": kind, "batch": b, "length": n,
                          "seqs": seqs, "adapters": adapters})
    ids_path = root / "jina-v3-real.ids.jsonl"
    ids_path.write_text("".join(json.dumps({"name": c["name"], "seqs": c["seqs"], "adapters": c["adapters"]}) + "\n"
                                for c in cases))
    run, torch_version = torch_runner(d, args.threads)
    orchid = OrchidRunner(args, d, ids_path, [])
    loads = {"before": os.getloadavg()}
    rows, raw = [], []
    for c in cases:
        print(f"{c['name']} ...", file=sys.stderr, flush=True)
        oms, tms, first = time_both(orchid, lambda seqs, c=c: run(c["kind"], seqs, c["adapters"]), c, args)
        o = orchid.first[c["name"]]
        cos = float(o @ first / (np.linalg.norm(o) * np.linalg.norm(first)))
        op, tp = percentiles(oms), percentiles(tms)
        rows.append((c, op["p50"], tp["p50"], cos))
        raw.append({"case": c["name"], "kind": c["kind"], "batch": c["batch"], "length": c["length"],
                    "cosine_first_row": cos, "orchid_ms": oms, "torch_ms": tms})
        print(rows[-1][1:], file=sys.stderr, flush=True)
    orchid.close()
    loads["after"] = os.getloadavg()

    p50 = {(r[0]["kind"], r[0]["batch"], r[0]["length"]): (r[1], r[2]) for r in rows}
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# jina-embeddings-v3 task adapters on the CPU: orchid vs transformers + PEFT (PyTorch fp32, SDPA)", "",
        f"- machine: {machine()}", f"- commit: {commit()}", f"- date: {date}",
        f"- threads: {args.threads} on both sides; torch {torch_version}",
        f"- load averages (1, 5, 15 min) before {loads['before']}, after {loads['after']}: the machine is "
        "shared with other builds, so the absolute times are noisy; the two sides alternate single runs, "
        "so the drift lands on both",
        "- model: jina-embeddings-v3's shapes (1024 wide, 24 layers, 16 heads, fc1 4096), random weights, "
        "5 LoRA adapters of rank 4 on every linear layer and the word embeddings, vocabulary 16002 (test "
        "tokenizer; only the table's size differs)",
        f"- each case: {args.warmup} warm-up, then alternating single runs until each side has >= "
        f"{args.min_iters} runs and >= {args.min_seconds} s; p50 = median run",
        "- mixed: orchid one batch of all five tasks; PyTorch five one-task sub-batches (its integrated "
        "adapters have one active adapter at a time)", "",
        "| case | orchid p50 ms | torch p50 ms | orchid / torch (speed) | cosine first row |",
        "|---|---|---|---|---|"]
    for c, o, t, cos in rows:
        lines.append(f"| {c['name']} | {o:.1f} | {t:.1f} | {t / o:.2f}x | {cos:.7f}"
                     f"{'' if cos >= 0.99999 else ' FAILED'} |")
    lines += ["", "Cost of the adapters (p50 of the case / p50 of base, same shape):", "",
              "| shape | orchid task / base | orchid mixed / base | torch task / base | torch mixed / base |",
              "|---|---|---|---|---|"]
    for (kind, b, n), (o, t) in p50.items():
        if kind != "base":
            continue
        ot, tt = p50[("task", b, n)]
        om, tm = p50[("mixed", b, n)]
        lines.append(f"| {b} x {n} | {ot / o:.3f} | {om / o:.3f} | {tt / t:.3f} | {tm / t:.3f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    os.makedirs(args.out, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    base = os.path.join(args.out, f"jina-v3-cpu-{stamp}")
    Path(base + ".md").write_text(text)
    Path(base + ".json").write_text(json.dumps({"machine": machine(), "commit": commit(), "date": date,
                                                "threads": args.threads, "load_averages": loads,
                                                "cases": raw}, indent=1))
    print(f"wrote {base}.md and .json", file=sys.stderr)
    if not all(r[3] >= 0.99999 for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
