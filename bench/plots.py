#!/usr/bin/env python3
"""PNG charts of benchmark results, drawn from the result files the benchmarks write to
bench/results/ (the .json / .jsonl beside each .md), next to them:

  serving-*.jsonl           <stem>.png: throughput per system, throughput and latency against
                            concurrent clients, batch-1 latency (bench/serving/run.py)
  mixed-load-*.jsonl        <stem>.png: query probe p99 and bulk docs/s against bulk clients;
                            <stem>-probe.png: every probe query's latency over time, per target
                            (bench/serving/mixed_load.py)
  hop-*.json                <stem>.png: serve vs gateway + worker latency, the hop per round
                            against the A/A control, C++ round trips (bench/serving/hop.py)
  cpu-engine-*.json         <stem>.png: orchid vs PyTorch per case (bench/cpu/engine_vs_torch.py)
  cpu-families-*.json       <stem>.png: orchid / PyTorch throughput per model and case
                            (bench/cpu/families_vs_torch.py)
  linear-vs-torch-*.json    <stem>.png: GFLOP/s per shape against the FMA peak
                            (bench/cpu/linear_vs_torch.py)
  embed-file-*.json         <stem>.png: sentences/s of `orchid embed` vs sentence-transformers
                            (bench/cpu/embed_file_vs_st.py)
  ab-engines-*.json         <stem>.png: B / A time per model and case (bench/cpu/ab_engines.py)
  tokenizer-*.json (or the  <stem>.png: speed-up over `tokenizers` / SentencePiece per input
  .md of runs before the    size, corpus tokens/s (bench/tokenizer/bench.py)
  JSON existed)

Every number drawn is read from the result file (or, for what a JSONL does not record — machine,
commit, date — from the .md written beside it). Each benchmark calls plot_after_run() last;
to (re)draw an existing result:

  python bench/plots.py bench/results/serving-20261201-014502.jsonl [more results ...]

Needs matplotlib (drawn with the Agg backend, no display). A benchmark whose Python lacks it
draws with .venv-bench's or .venv-peer's Python when one of them has it, else says so and goes on.
"""
import argparse
import datetime
import json
import re
import statistics
import subprocess
import sys
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DPI = 100
# Python environments of this repo that the benchmarks make (bench/run-cpu.sh, bench/serving/*.sh).
PLOT_PYTHONS = [REPO / ".venv-bench" / "bin" / "python", REPO / ".venv-peer" / "bin" / "python"]


# --- reading results -------------------------------------------------------------------------------

def kind_of(path):
    name = Path(path).name
    for kind in ("cpu-families", "cpu-engine", "linear-vs-torch", "embed-file", "ab-engines", "hop",
                 "serving", "mixed-load", "tokenizer"):
        if name.startswith(kind + "-"):
            return kind
    raise SystemExit(f"{path}: not a result file plots.py knows (see `python bench/plots.py -h`)")


def load(path):
    path = Path(path)
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if path.suffix == ".md":
        return path.read_text()
    return json.loads(path.read_text())


def md_meta(path):
    """machine, commit and date from the header of the .md beside a result file."""
    md = Path(path).with_suffix(".md")
    out = {}
    if not md.exists():
        return out
    for line in md.read_text().splitlines()[:20]:
        m = re.match(r"-\s*(machine|commit|date):\s*(.*)", line, re.I)
        if m:
            key, value = m.group(1).lower(), m.group(2).strip()
            if key == "commit" and "; date " in value:  # tokenizer: "Commit: abc; date 2026-..."
                value, out["date"] = value.split("; date ", 1)
            out.setdefault(key, value)
        m = re.match(r"#.*?(\d{4}-\d\d-\d\d)", line)
        if m:
            out.setdefault("date", m.group(1))
    return out


def readable_date(text):
    """2026-12-02T09:11:42.522099 -> 2026-12-02 09:11; other forms as they are."""
    try:
        d = datetime.datetime.fromisoformat(text)
    except ValueError:
        return text
    if len(text) <= 10:
        return text
    utc = d.utcoffset() == datetime.timedelta(0)
    return d.strftime("%Y-%m-%d %H:%M") + (" UTC" if utc else "")


def meta_line(path, data=None):
    meta = md_meta(path)
    if isinstance(data, dict):
        meta.update({k: str(data[k]) for k in ("machine", "commit", "date") if data.get(k)})
    machine = re.sub(r"\s*\((shared|`nproc`)[^)]*\)", "", meta.get("machine", "machine not recorded"))
    machine = re.sub(r", Linux \S+", "", machine)
    if meta.get("commit"):
        meta["commit"] = meta["commit"].split(" (")[0]
    parts = [machine, readable_date(meta.get("date", "")), f"commit {meta['commit']}" if meta.get("commit") else ""]
    return " · ".join(p for p in parts if p)


# --- drawing ------------------------------------------------------------------------------------------

def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"font.size": 8, "axes.titlesize": 9, "axes.grid": True, "grid.alpha": 0.3,
                         "legend.fontsize": 7, "figure.dpi": DPI})
    return plt


def save(fig, title, path, meta):
    fig.suptitle(f"{title}\n{meta}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return Path(path)


def pct(values, q):
    v = sorted(values)
    if not v:
        return float("nan")
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def plain_log_labels(axis):
    """Tick labels 20, 50, 100 on a log axis instead of 2×10¹, 5×10¹, 10²."""
    from matplotlib.ticker import FuncFormatter, LogLocator
    axis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def grouped_bars(ax, groups, series, values, colors=None, log=False, fmt=None):
    """Bars of values[(group, series)] (missing keys: no bar), one cluster per group."""
    width = 0.8 / max(1, len(series))
    for j, s in enumerate(series):
        xs = [i + (j - (len(series) - 1) / 2) * width for i in range(len(groups))]
        ys = [values.get((g, s), float("nan")) for g in groups]
        bars = ax.bar(xs, ys, width, label=s, color=colors[j] if colors else None)
        if fmt:
            for b, y in zip(bars, ys):
                if y == y:
                    ax.annotate(fmt(y), (b.get_x() + b.get_width() / 2, y), ha="center",
                                va="bottom", fontsize=6, xytext=(0, 1), textcoords="offset points")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    if log:
        ax.set_yscale("log")


def serving(path, plt):
    rows = load(path)
    meta = meta_line(path)
    color = {label: f"C{i}" for i, label in enumerate(dict.fromkeys(
        r["label"] for r in rows if r["suite"] != "offline" and not r["label"].endswith("-hop")))}
    fig, ((a, b), (c, d)) = plt.subplots(2, 2, figsize=(11, 7.5))
    # Throughput suite: one bar per target.
    thr = [r for r in rows if r["suite"] == "throughput"]
    labels = [f"{r['label']} ({r['input']})" for r in thr]
    bars = a.bar(labels, [r["embeddings_per_s"] for r in thr], color=[color[r["label"]] for r in thr])
    for bar, r in zip(bars, thr):
        a.annotate(f"{r['embeddings_per_s']:.1f}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                   ha="center", va="bottom", fontsize=7)
    if thr:
        r0 = thr[0]
        a.set_title(f"throughput: batches of {r0['batch']} × {r0['length']} tokens, {r0['clients']} clients")
    a.set_ylabel("embeddings / s")
    # Concurrency suite: throughput and latency against clients, per target.
    conc = {}
    for r in rows:
        if r["suite"] == "concurrency":
            conc.setdefault(r["label"], []).append(r)
    clients = sorted({r["clients"] for rs in conc.values() for r in rs})
    for label, rs in conc.items():
        rs.sort(key=lambda r: r["clients"])
        xs = [r["clients"] for r in rs]
        name = f"{label} ({rs[0]['input']})"
        b.plot(xs, [r["embeddings_per_s"] for r in rs], "o-", color=color[label], label=name)
        c.plot(xs, [r["p50_ms"] for r in rs], "o-", color=color[label], label=f"{name} p50")
        c.plot(xs, [r["p99_ms"] for r in rs], "^:", color=color[label], label=f"{name} p99")
    off = next((r for r in rows if r["suite"] == "offline"), None)
    if off:
        b.axhline(off["embeddings_per_s"], color="grey", ls="--", lw=1,
                  label=f"engine offline ({off['batch']} × {off['length']} per batch)")
    length = next((r["length"] for rs in conc.values() for r in rs), "")
    for ax in (b, c):
        ax.set_xscale("log", base=2)
        ax.set_xticks(clients)
        ax.set_xticklabels(clients)
        ax.set_xlabel("concurrent clients (batch 1)")
    b.set_title(f"concurrency: batch-1 requests of {length} tokens")
    b.set_ylabel("embeddings / s")
    b.set_ylim(bottom=0)
    c.set_title("concurrency: latency")
    c.set_ylabel("ms (log)")
    c.set_yscale("log")
    plain_log_labels(c.yaxis)
    b.legend()
    c.legend(ncol=2)
    # Latency suite, batch 1, strictly sequential (the hop rounds are hop.py's subject).
    lat = [r for r in rows if r["suite"] == "latency" and not r["label"].endswith("-hop")]
    groups = sorted({r["length"] for r in lat})
    series = list(dict.fromkeys(f"{r['label']} ({r['input']})" for r in lat))
    p50 = {(r["length"], f"{r['label']} ({r['input']})"): r["p50_ms"] for r in lat}
    grouped_bars(d, groups, series, p50, fmt=lambda v: f"{v:.0f}",
                 colors=[color[s.split(" (")[0]] for s in series])
    for patch in d.patches:  # text input (tokenized by the server): hatched
        patch.set_edgecolor("white")
    for container, s in zip(d.containers, series):
        if s.endswith("(text)"):
            for patch in container:
                patch.set_hatch("///")
    width = 0.8 / max(1, len(series))
    for j, s in enumerate(series):
        for i, g in enumerate(groups):
            r = next((r for r in lat if r["length"] == g and f"{r['label']} ({r['input']})" == s), None)
            if r:
                d.plot([i + (j - (len(series) - 1) / 2) * width], [r["p99_ms"]], "k_", ms=8)
    d.set_xticklabels([f"{g} tokens" for g in groups])
    d.set_title("batch-1 latency, one request at a time: p50 bars, p99 marks")
    d.set_ylabel("ms")
    d.legend(ncol=2)
    return [save(fig, "Serving benchmark, all-MiniLM-L6-v2 (ids: pre-tokenized; text: tokenized by the server)",
                 Path(path).with_suffix(".png"), meta)]


def mixed_load(path, plt):
    rows = load(path)
    meta = meta_line(path)
    targets = list(dict.fromkeys(r["target"] for r in rows if "probe_ms" in r))
    # The probe sends one query every `interval` s, open loop (mixed_load.py's Probe; rows from
    # before the JSONL recorded it used 0.2 s, as their .md says).
    interval = next((r["probe_interval_s"] for r in rows if "probe_interval_s" in r), 0.2)
    out = []
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    clients = sorted({r["bulk_clients"] for r in rows if "probe_ms" in r})
    for i, label in enumerate(targets):
        rs = sorted((r for r in rows if r.get("target") == label and "probe_ms" in r),
                    key=lambda r: r["bulk_clients"])
        a.plot([r["bulk_clients"] for r in rs], [pct(r["probe_ms"], .99) for r in rs], "o-",
               color=f"C{i}", label=label)
        rb = [r for r in rs if r.get("bulk_docs_per_s")]
        b.plot([r["bulk_clients"] for r in rb], [r["bulk_docs_per_s"] for r in rb], "o-",
               color=f"C{i}", label=label)
        b.plot([r["bulk_clients"] for r in rb], [r["bulk_alone_docs_per_s"] for r in rb], ":",
               color=f"C{i}")
    a.set_xticks(clients)
    a.set_yscale("log")
    a.set_xlabel("bulk clients (64-document requests, back to back)")
    a.set_ylabel("probe p99 latency, ms (log)")
    plain_log_labels(a.yaxis)
    a.set_title(f"a short query every {interval:g} s beside bulk indexing")
    a.axhline(100, color="grey", ls=":", lw=1)
    a.legend()
    b.set_xticks([c for c in clients if c])
    b.set_xlabel("bulk clients")
    b.set_ylabel("bulk documents / s (dotted: without the probe)")
    b.set_ylim(bottom=0)
    b.set_title("bulk throughput")
    b.legend()
    out.append(save(fig, "Mixed load: query latency under bulk load, all-MiniLM-L6-v2",
                    Path(path).with_suffix(".png"), meta))
    # Every probe over time: the phases of each target one after another (the bulk-alone phases
    # between them, which have no probe, left out).
    fig, axes = plt.subplots(len(targets), 1, figsize=(11, 1.5 + 1.6 * len(targets)), sharex=True,
                             sharey=True, squeeze=False)
    for i, (ax, label) in enumerate(zip(axes[:, 0], targets)):
        t0 = 0.0
        for r in sorted((r for r in rows if r.get("target") == label and "probe_ms" in r),
                        key=lambda r: r["bulk_clients"]):
            step = r.get("probe_interval_s", interval)
            xs = [t0 + k * step for k in range(len(r["probe_ms"]))]
            ax.plot(xs, r["probe_ms"], ".", ms=2.5, color=f"C{i}")
            ax.axvline(t0, color="grey", lw=0.6)
            ax.annotate(f"{r['bulk_clients']} bulk", (t0, 1), xycoords=("data", "axes fraction"),
                        xytext=(3, -10), textcoords="offset points", fontsize=7)
            t0 = xs[-1] + step if xs else t0
        ax.set_yscale("log")
        ax.set_ylabel(f"{label}\nms (log)")
    axes[-1, 0].set_xlabel(f"seconds of probing (one query every {interval:g} s): the phases with "
                           f"{', '.join(str(c) for c in clients)} bulk clients one after another")
    out.append(save(fig, "Mixed load: every probe query's latency over time",
                    Path(path).with_name(Path(path).stem + "-probe.png"), meta))
    return out


def hop(path, plt):
    d = load(path)
    panels = 2 + ("floor_us" in d)
    fig, axes = plt.subplots(1, panels, figsize=(4 * panels, 3.8))
    a, b = axes[0], axes[1]
    qs = ["p50", "p90", "p99"]
    vals = {(q, n): d[k][q] for q in qs for n, k in (("serve", "serve_us"), ("gateway + worker", "gateway_us"))}
    grouped_bars(a, qs, ["serve", "gateway + worker"], vals, fmt=lambda v: f"{v:.0f}")
    a.set_ylabel("µs")
    a.set_title(f"batch 1, {d['length']} token ids, alternating")
    a.legend()
    if d.get("rounds"):
        xs = range(1, len(d["rounds"]) + 1)
        w = 0.4
        b.bar([x - w / 2 for x in xs], [r["hop_us"] for r in d["rounds"]], w, label="hop (gateway − serve)")
        if any(r.get("control_us") is not None for r in d["rounds"]):
            b.bar([x + w / 2 for x in xs], [r["control_us"] or 0 for r in d["rounds"]], w,
                  label="A/A control (serve − serve)")
        b.set_xlabel("round of fresh processes")
        b.set_title("median paired difference per round")
    elif d.get("hop_us_per_tenth"):
        xs = range(1, len(d["hop_us_per_tenth"]) + 1)
        b.bar(xs, d["hop_us_per_tenth"], label="hop (gateway − serve)")
        b.set_xlabel("tenth of the requests")
        b.set_title("median paired difference per tenth")
    b.set_xticks(list(xs))
    b.axhline(200, color="grey", ls="--", lw=1, label="target +200 µs")
    b.axhline(0, color="black", lw=0.6)
    b.set_ylabel("µs")
    b.set_ylim(top=b.get_ylim()[1] * 1.3)  # room for the legend
    b.legend(loc="upper left", ncol=2)
    if "floor_us" in d:
        f = d["floor_us"]
        names = [("HTTP /health\n(serve)", "http_health_us"), ("gRPC Health\n(worker)", "grpc_health_us"),
                 ("Embed HTTP\n(serve)", "serve_embed_us"), ("Embed gRPC\n(worker)", "worker_embed_grpc_us"),
                 ("Embed HTTP\n(gateway)", "gateway_embed_us")]
        names = [(n, k) for n, k in names if k in f]
        c = axes[2]
        bars = c.bar([n for n, _ in names], [f[k]["p50"] for _, k in names], color="C2")
        for bar, (_, k) in zip(bars, names):
            c.annotate(f"{f[k]['p50']:.0f}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                       ha="center", va="bottom", fontsize=7)
        c.set_ylabel("p50 µs")
        c.set_title("C++ clients' round trips (p50)")
        c.tick_params(axis="x", labelsize=6)
    return [save(fig, "Gateway → worker hop", Path(path).with_suffix(".png"), meta_line(path, d))]


def cpu_engine(path, plt):
    d = load(path)
    cases = d["cases"]
    names = list(dict.fromkeys(c["case"] for c in cases))
    dtypes = list(dict.fromkeys(c.get("dtype", "") for c in cases))
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    vals, ratio = {}, {}
    for c in cases:
        dt = c.get("dtype", "")
        vals[c["case"], f"orchid {dt}".strip()] = c["orchid"]["p50_ms"]
        vals[c["case"], f"PyTorch fp32 (beside {dt})" if len(dtypes) > 1 else "PyTorch fp32"] = c["torch"]["p50_ms"]
        ratio[c["case"], dt or "orchid"] = c["torch"]["p50_ms"] / c["orchid"]["p50_ms"]
    series = list(dict.fromkeys(s for _, s in vals))
    from matplotlib.colors import to_rgba
    colors = [to_rgba(f"C{i // 2}", 1.0 if i % 2 == 0 else 0.4) for i in range(len(series))]
    grouped_bars(a, names, series, vals, log=True, colors=colors)
    a.set_ylabel("p50 ms per batch (log)")
    a.set_title("time per batch")
    a.legend()
    grouped_bars(b, names, [dt or "orchid" for dt in dtypes], ratio, fmt=lambda v: f"{v:.2f}")
    b.axhline(1, color="black", lw=0.8)
    b.set_ylabel("PyTorch p50 / orchid p50 (> 1: orchid faster)")
    b.set_title("speed-up over PyTorch fp32")
    b.legend()
    for ax in (a, b):
        ax.set_xlabel("case: b<batch>_l<tokens per sequence>")
        ax.tick_params(axis="x", labelsize=7)
    return [save(fig, f"CPU engine vs sentence-transformers (PyTorch), all-MiniLM-L6-v2, {d.get('threads')} threads",
                 Path(path).with_suffix(".png"), meta_line(path, d))]


def cpu_families(path, plt):
    d = load(path)
    cases = d["cases"]
    dtypes = list(dict.fromkeys(c.get("dtype", "") for c in cases))
    keys = list(dict.fromkeys((c["model"], c["case"]) for c in cases))
    n = len(keys)
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 1.6 + 0.3 * n * max(1, len(dtypes))))
    h = 0.8 / len(dtypes)
    for j, dt in enumerate(dtypes):
        ys, ratios, o_ms, t_ms = [], [], [], []
        for i, key in enumerate(keys):
            c = next((c for c in cases if (c["model"], c["case"]) == key and c.get("dtype", "") == dt), None)
            if c is None:
                continue
            ys.append(i + (j - (len(dtypes) - 1) / 2) * h)
            ratios.append(c["orchid"]["emb_per_s"] / c["torch"]["emb_per_s"])
            o_ms.append(c["orchid"]["p50_ms"])
            t_ms.append(c["torch"]["p50_ms"])
        label = f"{dt} (both sides)" if dt else "fp32"
        bars = a.barh(ys, ratios, h, color=f"C{j}", label=label)
        for bar, v in zip(bars, ratios):
            a.annotate(f"{v:.2f}x", (v, bar.get_y() + bar.get_height() / 2), va="center", fontsize=6,
                       xytext=(2, 0), textcoords="offset points")
        b.barh([y - h / 4 for y in ys], o_ms, h / 2, color=f"C{j}", label=f"orchid {dt}".strip())
        b.barh([y + h / 4 for y in ys], t_ms, h / 2, color=f"C{j}", alpha=0.4,
               label=f"PyTorch {dt}".strip())
    for ax in (a, b):
        ax.set_yticks(range(n))
        ax.set_yticklabels([f"{m} {c}" for m, c in keys])
        ax.invert_yaxis()
    a.axvline(1, color="black", lw=0.8)
    a.set_xlabel("orchid sequences/s ÷ PyTorch sequences/s, same dtype (> 1: orchid faster)")
    a.set_title("throughput ratio")
    a.set_xlim(0, a.get_xlim()[1] * 1.08)
    a.legend(loc="best")
    b.set_xscale("log")
    b.set_xlabel("p50 ms per batch (log)")
    b.set_title("time per batch: orchid (upper bar) and PyTorch (pale)")
    b.set_yticklabels([])
    probe = d.get("host_probe")
    title = f"CPU engine vs transformers (PyTorch), random-weight models, {d.get('threads')} threads"
    if probe and probe.get("before", {}).get("torch_gemm_pct_of_peak"):
        title += (f"; host probe: PyTorch GEMM at {probe['before']['torch_gemm_pct_of_peak']:.0f}% / "
                  f"{probe['after']['torch_gemm_pct_of_peak']:.0f}% of peak (before / after)")
    return [save(fig, title, Path(path).with_suffix(".png"), meta_line(path, d))]


def linear_vs_torch(path, plt):
    d = load(path)
    res = d["results"]
    threads = sorted({r["threads"] for r in res})
    fig, axes = plt.subplots(1, len(threads), figsize=(5.5 * len(threads), 4), squeeze=False, sharey=True)
    for ax, t in zip(axes[0], threads):
        rs = [r for r in res if r["threads"] == t]
        shapes = [r["shape"] for r in rs]
        vals = {}
        for r in rs:
            vals[r["shape"], "orchid Linear()"] = r["orchid_gflops"]
            vals[r["shape"], "torch linear"] = r["torch_gflops"]
        grouped_bars(ax, shapes, ["orchid Linear()", "torch linear"], vals)
        if d.get("peak_gflops_per_core"):
            ax.axhline(d["peak_gflops_per_core"] * t, color="grey", ls="--", lw=1,
                       label=f"measured FMA peak × {t}")
        ax.set_title(f"{t} thread{'s' if t > 1 else ''}, m = {rs[0]['m']} rows")
        ax.set_ylim(top=ax.get_ylim()[1] * 1.2)
        ax.set_ylabel("GFLOP/s")
        ax.tick_params(axis="x", labelrotation=45, labelsize=7)
        ax.legend()
    return [save(fig, "Linear layers: orchid Linear() vs torch.nn.functional.linear (fp32)",
                 Path(path).with_suffix(".png"), meta_line(path, d))]


def embed_file(path, plt):
    d = load(path)
    n = d["sentences"]
    sides = [("orchid embed\n(whole process)", d["orchid_seconds"]),
             ("sentence-transformers\nencode()", d["st_encode_seconds"])]
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, (label, secs) in enumerate(sides):
        med = n / statistics.median(secs)
        ax.bar(i, med, color=f"C{i}", width=0.6)
        ax.plot([i] * len(secs), [n / s for s in secs], "k.", ms=5)
        ax.annotate(f"{med:.0f}", (i, med), ha="center", va="bottom", xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(range(len(sides)))
    ax.set_xticklabels([s for s, _ in sides])
    ax.set_ylabel("sentences / s (bars: median; dots: runs)")
    ax.set_title(f"{n} STS-B sentences, {d.get('model')}, {d.get('threads')} threads")
    return [save(fig, "Offline bulk embedding", Path(path).with_suffix(".png"), meta_line(path, d))]


def ab_engines(path, plt):
    d = load(path)
    rows = d["rows"]
    fig, ax = plt.subplots(figsize=(8, 1.5 + 0.3 * len(rows)))
    labels = [f"{r['model']} {r['case']} {r['dtype']}" for r in rows]
    bars = ax.barh(range(len(rows)), [r["ratio"] for r in rows], color="C0")
    for bar, r in zip(bars, rows):
        ax.annotate(f"{r['ratio']:.3f}", (r["ratio"], bar.get_y() + bar.get_height() / 2), va="center",
                    fontsize=6, xytext=(2, 0), textcoords="offset points")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.axvline(1, color="black", lw=0.8)
    lo = min(r["ratio"] for r in rows)
    hi = max(r["ratio"] for r in rows)
    ax.set_xlim(min(0.9, lo - 0.02), max(1.1, hi + 0.03))
    a, b = d.get("a_label", "A"), d.get("b_label", "B")
    ax.set_xlabel(f"{b} p50 ÷ {a} p50 (> 1: {b} slower)")
    ax.set_title(f"A: {d.get('a')}\nB: {d.get('b')}", fontsize=7)
    return [save(fig, "A/B of two orchid_engine_bench builds", Path(path).with_suffix(".png"), meta_line(path, d))]


def tokenizer_rows_from_markdown(text):
    """The two tables of a tokenizer-*.md (runs from before bench.py wrote JSON), as bench.py's
    result rows (the fields the chart needs)."""
    num = lambda s: float(s.replace(",", "").replace("*", "").replace("×", "").replace(" M", "e6").strip())  # noqa: E731
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 12 and cells[2].isdigit():
            r = {"tokenizer": cells[0], "set": cells[1], "inputs": int(cells[2]),
                 "orchid": {"p50_us": num(cells[3]), "p99_us": num(cells[4])},
                 "hf": {"p50_us": num(cells[5]), "p99_us": num(cells[6]), "batch_mean_us": num(cells[7])},
                 # the table's own ratios, of unrounded times
                 "speedup": {"hf": num(cells[10])}}
            if cells[8] != "—":
                r["spm"] = {"p50_us": num(cells[8]), "p99_us": num(cells[9])}
                r["speedup"]["spm"] = num(cells[11])
            rows.append(r)
        elif len(cells) == 10 and cells[3].endswith(" M"):
            r = {"tokenizer": cells[0], "set": "STS-B corpus", "inputs": int(num(cells[1])),
                 "orchid": {"tokens": int(num(cells[2])), "tokens_per_s": num(cells[3])},
                 "hf": {"tokens_per_s": num(cells[4]), "batch_tokens_per_s": num(cells[5])}}
            if cells[6] != "—":
                r["spm"] = {"tokens_per_s": num(cells[6])}
            rows.append(r)
    return rows


def tokenizer(path, plt):
    d = load(path)
    rows = tokenizer_rows_from_markdown(d) if isinstance(d, str) else d["results"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.3))
    lat = [r for r in rows if r["set"] != "STS-B corpus"]
    toks = list(dict.fromkeys(r["tokenizer"] for r in lat))
    sets = list(dict.fromkeys(r["set"] for r in lat))
    vals = {}
    for r in lat:
        up = r.get("speedup", {})
        vals[r["tokenizer"], f"vs tokenizers, {r['set']}"] = up.get("hf", r["hf"]["p50_us"] / r["orchid"]["p50_us"])
        if r.get("spm"):
            vals[r["tokenizer"], f"vs SentencePiece, {r['set']}"] = up.get(
                "spm", r["spm"]["p50_us"] / r["orchid"]["p50_us"])
    series = [f"vs tokenizers, {s}" for s in sets] + [f"vs SentencePiece, {s}" for s in sets
                                                       if any(k[1] == f"vs SentencePiece, {s}" for k in vals)]
    colors = [plt.cm.Blues(0.4 + 0.2 * i) for i in range(len(sets))] + \
             [plt.cm.Oranges(0.4 + 0.2 * i) for i in range(len(series) - len(sets))]
    grouped_bars(a, [t.replace(" (", "\n(") for t in toks], series,
                 {(t.replace(" (", "\n("), s): v for (t, s), v in vals.items()}, colors=colors)
    a.axhline(1, color="black", lw=0.8)
    a.set_ylabel("peer p50 ÷ orchid p50 per input (> 1: orchid faster)")
    a.set_title("latency per input, single thread: speed-up")
    a.set_ylim(top=a.get_ylim()[1] * 1.3)
    a.legend(ncol=2)
    a.tick_params(axis="x", labelsize=7)
    corpus = [r for r in rows if r["set"] == "STS-B corpus"]
    names = [r["tokenizer"].replace(" (", "\n(") for r in corpus]
    vals = {}
    for r, n in zip(corpus, names):
        vals[n, "orchid"] = r["orchid"]["tokens_per_s"] / 1e6
        vals[n, "tokenizers per call"] = r["hf"]["tokens_per_s"] / 1e6
        vals[n, "tokenizers encode_batch"] = r["hf"]["batch_tokens_per_s"] / 1e6
        if r.get("spm"):
            vals[n, "SentencePiece"] = r["spm"]["tokens_per_s"] / 1e6
    grouped_bars(b, names, [s for s in ("orchid", "tokenizers per call", "tokenizers encode_batch",
                                        "SentencePiece") if any(k[1] == s for k in vals)], vals)
    b.set_ylabel("million tokens / s")
    b.set_title("whole STS-B corpus (11 languages), single thread")
    b.legend()
    b.tick_params(axis="x", labelsize=7)
    return [save(fig, "Tokenizers: orchid vs Hugging Face tokenizers and SentencePiece",
                 Path(path).with_suffix(".png"), meta_line(path, d if isinstance(d, dict) else None))]


PLOTTERS = {"serving": serving, "mixed-load": mixed_load, "hop": hop, "cpu-engine": cpu_engine,
            "cpu-families": cpu_families, "linear-vs-torch": linear_vs_torch, "embed-file": embed_file,
            "ab-engines": ab_engines, "tokenizer": tokenizer}


def plot(path):
    """Draws the charts of one result file beside it; returns the PNG paths."""
    return PLOTTERS[kind_of(path)](path, pyplot())


def python_with_matplotlib():
    for py in PLOT_PYTHONS:
        if py.exists() and subprocess.run([str(py), "-c", "import matplotlib"],
                                          capture_output=True).returncode == 0:
            return py
    return None


def plot_after_run(path):
    """What a benchmark calls last: the charts of its result file, or a message saying why there
    are none. Never fails the benchmark: its results are written already."""
    path = Path(path)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        other = python_with_matplotlib()
        if other is not None:
            print(f"plots: no matplotlib in {sys.executable}; drawing with {other}", file=sys.stderr)
            subprocess.run([str(other), str(Path(__file__).resolve()), str(path)])
            return
        print(f"plots: matplotlib is not installed for {sys.executable}, so no PNG charts for "
              f"{path.name}. Install it ({sys.executable} -m pip install matplotlib) and run "
              f"`python bench/plots.py {path}`.", file=sys.stderr)
        return
    try:
        for png in plot(path):
            print(f"wrote {png}", file=sys.stderr)
    except Exception:  # a chart bug must not cost a finished benchmark its exit status
        traceback.print_exc()
        print(f"plots: drawing {path.name} failed (its results are written); fix bench/plots.py and "
              f"run `python bench/plots.py {path}`", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", help="bench/results/<kind>-<date>.json, .jsonl (or tokenizer .md)")
    args = ap.parse_args()
    try:
        pyplot()
    except ImportError:
        other = python_with_matplotlib()
        if other is None:
            sys.exit(f"plots: matplotlib is not installed for {sys.executable} "
                     f"(`{sys.executable} -m pip install matplotlib`)")
        print(f"plots: no matplotlib in {sys.executable}; drawing with {other}", file=sys.stderr)
        sys.exit(subprocess.run([str(other), str(Path(__file__).resolve()), *args.results]).returncode)
    for path in args.results:
        for png in plot(path):
            print(f"wrote {png} ({png.stat().st_size // 1024} KB)")


if __name__ == "__main__":
    main()
