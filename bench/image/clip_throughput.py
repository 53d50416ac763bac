#!/usr/bin/env python3
"""CLIP image embeddings per second on the CPU, the whole path per image (issue 43): orchid serve
against transformers + Pillow on PyTorch, float32 and bfloat16, the same number of threads.

  orchid    `orchid serve --model DIR --threads T --dtype float32|bfloat16`; the client sends
            batches of B images as data URIs to POST /v1/embeddings ({"input": [...],
            "normalize": false}) over one keep-alive connection, one request at a time. Timed:
            base64 + JSON on the client, HTTP, the server's decode + preprocess + vision tower,
            the reply and its parsing.
  PyTorch   in this process: load_image(Image.open(BytesIO(bytes))) (Pillow decode, EXIF, RGB),
            CLIPImageProcessor(**preprocessor_config)(images, return_tensors="pt") (the slow,
            PIL one: torchvision is not installed) and model.get_image_features(pixel_values)
            under torch.inference_mode(), torch.set_num_threads(T). The encoded bytes are already
            in memory (no base64, no HTTP: in PyTorch's favour). bf16 two ways:
            "bf16 cast" = model.to(torch.bfloat16) fed bf16 pixel_values, and
            "bf16 autocast" = the fp32 model under torch.autocast("cpu", dtype=torch.bfloat16);
            the faster of the two at each B is the "PyTorch bf16" the ratios use.

The model: transformers CLIPModel of ViT-B/16's vision shape (768 wide, 12 layers, 12 heads,
FFN 3072, 224 px, patch 16, quick_gelu, projection 512) with a small text tower (2 layers,
64 wide; not measured) and the test fixtures' CLIP tokenizer (tests/fixtures/clip/tokenizer),
random weights seeded and scaled as tests/fixtures/clip/make_fixtures.py's randomise() does,
saved with save_pretrained (safetensors) in --work (reused while its settings are the same),
with openai/clip-vit-base-patch16's preprocessor_config.json. No model hub.

The images are made here with a fixed seed (not the tests' corpus): --images pictures (48:
the default run stays under ~10 minutes on a 2-core host), all JPEG (quality 90, 4:2:0) but
every 16th a PNG, in sizes 640x480, 1024x768, 500x800, 800x600 and 1280x720: gradients,
shapes, blur and noise. A row = one side, dtype and B; one pass = every image once, in batches
of B. Both servers are started first and stay up; every row is warmed up (--warmup batches),
then the rows take turns, one timed pass each, round after round, --repeat rounds (the host's
drift lands on all of them); images/s is the median over a row's passes. CPU s / image (this
process's CPU time, plus the server's for orchid rows) is reported beside it: on a busy host
it moves less than the wall time. The servers' CPU time while other rows run is reported too
(it should be ~0: idle servers must not steal the PyTorch rows' cores). Fidelity: per-image
cosine of each row's embeddings (its first timed pass) against PyTorch fp32's at the same B
(min and mean), and the mean cosine between different images under PyTorch fp32 (how far apart
the random model puts them: near 1 would make the fidelity numbers meaningless).

    bench/image/run-clip.sh [--quick] [--threads 2] [--repeat 3] [--batches 1,16]

Writes bench/results/clip-images-<date>-<time>.{md,json} (-quick appended for --quick): machine
(lscpu), commit, versions, load averages, per row the passes' images/s, and the ratios.
"""
import argparse
import base64
import copy
import datetime
import hashlib
import io
import json
import math
import os
import platform
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import PIL
import requests
import torch
import transformers
from PIL import Image, ImageDraw, ImageFilter
from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPTokenizerFast
from transformers.image_utils import load_image

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "fixtures" / "clip"))
from make_fixtures import randomise  # noqa: E402  (the fixtures' weight scaling)

TOKENIZER = REPO / "tests" / "fixtures" / "clip" / "tokenizer"
SEED = 43
# openai/clip-vit-base-patch16's preprocessor_config.json
PREPROCESSOR = {
    "crop_size": {"height": 224, "width": 224}, "do_center_crop": True, "do_convert_rgb": True,
    "do_normalize": True, "do_rescale": True, "do_resize": True,
    "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_processor_type": "CLIPImageProcessor",
    "image_std": [0.26862954, 0.26130258, 0.27577711], "processor_class": "CLIPProcessor",
    "resample": 3, "rescale_factor": 0.00392156862745098, "size": {"shortest_edge": 224},
}
VISION = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
              image_size=224, patch_size=16, num_channels=3, hidden_act="quick_gelu",
              layer_norm_eps=1e-5, projection_dim=512)
SIZES = [(640, 480), (1024, 768), (500, 800), (800, 600), (1280, 720)]  # width x height
TARGET_RATIO, TARGET_COSINE = 2.0, 0.9999


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def lscpu():
    out = subprocess.run(["lscpu"], capture_output=True, text=True,
                         env=dict(os.environ, LC_ALL="C")).stdout
    info = {}
    for line in out.splitlines():
        k, _, v = line.partition(":")
        info[k.strip()] = v.strip()
    flags = set(info.get("Flags", "").split())
    keep = ["avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile"]
    return {"model": info.get("Model name", platform.processor()), "cpus": info.get("CPU(s)"),
            "threads_per_core": info.get("Thread(s) per core"),
            "hypervisor": info.get("Hypervisor vendor", ""), "l3": info.get("L3 cache", ""),
            "flags": [f for f in keep if f in flags],
            "os": f"{platform.system()} {platform.release()}"}


def commit():
    try:
        sha = subprocess.check_output(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                      text=True).strip()
        dirty = subprocess.call(["git", "-C", str(REPO), "diff", "--quiet", "HEAD"]) != 0
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# ---------------------------------------------------------------------------------- inputs

def picture(w, h, rng):
    """A photo-like picture: a smooth two-colour gradient, blurred shapes, sharp shapes, noise."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    ang = rng.uniform(0, 2 * math.pi)
    t = (np.cos(ang) * x / w + np.sin(ang) * y / h)
    t = (t - t.min()) / max(float(t.max() - t.min()), 1e-6)
    c0, c1 = rng.uniform(0, 255, 3), rng.uniform(0, 255, 3)
    img = c0 * (1 - t[..., None]) + c1 * t[..., None]
    img += 25 * np.sin(x / w * rng.uniform(2, 9) + rng.uniform(0, 6))[..., None] * \
        np.cos(y / h * rng.uniform(2, 9))[..., None]
    im = Image.fromarray(np.clip(img, 0, 255).astype(np.uint8), "RGB")
    for layer in range(2):  # blurred background shapes, then sharp foreground ones
        over = im.copy()
        d = ImageDraw.Draw(over)
        for _ in range(int(rng.integers(3, 9))):
            x0, y0 = rng.uniform(-0.1, 0.9) * w, rng.uniform(-0.1, 0.9) * h
            x1, y1 = x0 + rng.uniform(0.05, 0.5) * w, y0 + rng.uniform(0.05, 0.5) * h
            fill = tuple(int(v) for v in rng.integers(0, 256, 3))
            kind = int(rng.integers(0, 3))
            if kind == 0:
                d.ellipse([x0, y0, x1, y1], fill=fill)
            elif kind == 1:
                d.rectangle([x0, y0, x1, y1], fill=fill)
            else:
                d.polygon([(x0, y1), ((x0 + x1) / 2, y0), (x1, y1)], fill=fill)
        im = over.filter(ImageFilter.GaussianBlur(rng.uniform(4, 12))) if layer == 0 else over
    arr = np.asarray(im, np.float32) + rng.normal(0, rng.uniform(2, 8), (h, w, 3))
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), "RGB")


def make_images(n):
    rng = np.random.default_rng(SEED)
    out = []
    for i in range(n):
        w, h = SIZES[i % len(SIZES)]
        im = picture(w, h, rng)
        buf = io.BytesIO()
        if i % 16 == 15:
            im.save(buf, format="PNG")
            out.append({"name": f"img{i:03d}-{w}x{h}.png", "mime": "png", "bytes": buf.getvalue()})
        else:
            im.save(buf, format="JPEG", quality=90)
            out.append({"name": f"img{i:03d}-{w}x{h}.jpg", "mime": "jpeg", "bytes": buf.getvalue()})
    return out


def make_model(work):
    """The random-weight ViT-B/16 CLIP, saved once per settings (the folder name is their hash)."""
    tok = CLIPTokenizerFast.from_pretrained(str(TOKENIZER))
    text = dict(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, max_position_embeddings=77, hidden_act="quick_gelu",
                layer_norm_eps=1e-5, bos_token_id=tok.bos_token_id, pad_token_id=tok.pad_token_id,
                eos_token_id=tok.eos_token_id, projection_dim=512)
    settings = {"text": text, "vision": VISION, "projection_dim": 512, "seed": SEED,
                "preprocessor": PREPROCESSOR, "transformers": transformers.__version__,
                "torch": ".".join(torch.__version__.split(".")[:2])}
    key = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]
    d = Path(work) / f"clip-vit-b16-random-{key}"
    if (d / "model.safetensors").exists() and (d / "preprocessor_config.json").exists():
        log(f"model: reusing {d}")
        return d
    log(f"model: building {d}")
    tmp = d.with_name(d.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    cfg = CLIPConfig(text_config=text, vision_config=VISION, projection_dim=512)
    torch.manual_seed(SEED)
    model = CLIPModel(cfg).eval()
    randomise(model, SEED)
    model.save_pretrained(tmp, safe_serialization=True)
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json",
              "merges.txt"):
        shutil.copy(TOKENIZER / f, tmp / f)
    (tmp / "preprocessor_config.json").write_text(json.dumps(PREPROCESSOR, indent=2) + "\n")
    shutil.rmtree(d, ignore_errors=True)
    tmp.rename(d)
    return d


def batches(images, b):
    return [images[i:i + b] for i in range(0, len(images), b)]


def summary(rates):
    return {"median": statistics.median(rates), "min": min(rates), "max": max(rates),
            "passes": [round(r, 3) for r in rates]}


# ---------------------------------------------------------------------------------- PyTorch

class Torch:
    def __init__(self, model_dir, threads, cast_bf16=True):
        torch.set_num_threads(threads)
        self.proc = CLIPImageProcessor(**{k: v for k, v in PREPROCESSOR.items()
                                          if k not in ("image_processor_type", "processor_class")})
        self.fp32 = CLIPModel.from_pretrained(str(model_dir), dtype=torch.float32).eval()
        self.bf16 = copy.deepcopy(self.fp32).to(torch.bfloat16).eval() if cast_bf16 else None
        self.attn = getattr(self.fp32.config, "_attn_implementation", "?")

    def embed(self, variant, items):
        ims = [load_image(Image.open(io.BytesIO(it["bytes"]))) for it in items]
        px = self.proc(images=ims, return_tensors="pt")["pixel_values"]
        with torch.inference_mode():
            if variant == "fp32":
                f = self.fp32.get_image_features(pixel_values=px)
            elif variant == "bf16-cast":
                f = self.bf16.get_image_features(pixel_values=px.to(torch.bfloat16))
            else:  # bf16-autocast
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    f = self.fp32.get_image_features(pixel_values=px)
        return f.float().numpy()


# ---------------------------------------------------------------------------------- orchid

class Serve:
    """`orchid serve` of the model on a free port, its log kept."""

    def __init__(self, orchid, model_dir, threads, dtype, log_path, serve_args=()):
        extra = ["--int8-serve-anyway", "--int8-cache", "off"] if dtype == "int8" else []
        extra += list(serve_args)
        self.cmd = [orchid, "serve", "--model", str(model_dir), "--host", "127.0.0.1", "--port",
                    "0", "--threads", str(threads), "--dtype", dtype, *extra]
        t0 = time.perf_counter()
        self.p = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True)
        self.lines = []
        for line in self.p.stdout:
            self.lines.append(line.rstrip("\n"))
            m = re.search(r" on http://(\S+):(\d+)\s*$", line)
            if m:
                self.url = f"http://127.0.0.1:{m.group(2)}"
                break
        else:
            self.p.wait()
            raise SystemExit(f"orchid serve ({dtype}) did not start (exit {self.p.returncode}):\n"
                             + "\n".join(self.lines[-30:]))
        self.startup_s = time.perf_counter() - t0
        self.log = open(log_path, "w")
        self.log.write("\n".join(self.lines) + "\n")
        # Keep reading its log, so that a full pipe never stalls the server.
        threading.Thread(target=self._drain, daemon=True).start()
        self.session = requests.Session()

    def _drain(self):
        for line in self.p.stdout:
            self.lines.append(line.rstrip("\n"))
            self.log.write(line)

    def embed(self, items):
        body = {"input": [f"data:image/{it['mime']};base64," +
                          base64.b64encode(it["bytes"]).decode("ascii") for it in items],
                "normalize": False}
        r = self.session.post(self.url + "/v1/embeddings", data=json.dumps(body),
                              headers={"content-type": "application/json"}, timeout=600)
        if r.status_code != 200:
            raise SystemExit(f"orchid: HTTP {r.status_code}: {r.text[:500]}")
        rows = sorted(r.json()["data"], key=lambda x: x["index"])
        return np.asarray([x["embedding"] for x in rows], np.float32)

    def cpu_s(self):
        """The server's CPU seconds so far (user + system, all threads)."""
        f = open(f"/proc/{self.p.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def peak_rss_mib(self):
        try:
            for line in open(f"/proc/{self.p.pid}/status"):
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
        except OSError:
            pass
        return None

    def stop(self):
        self.session.close()
        self.p.terminate()
        try:
            self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.log.close()


# ---------------------------------------------------------------------------------- timing

def one_pass(fn, groups):
    """Every image once, in the given batches: seconds and the embeddings in image order."""
    out = []
    t0 = time.perf_counter()
    for g in groups:
        out.append(fn(g))
    return time.perf_counter() - t0, np.concatenate(out)


def cosines(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def spread(e):
    """Mean cosine between different images' embeddings."""
    e = np.asarray(e, np.float64)
    e = e / np.linalg.norm(e, axis=1, keepdims=True)
    c = e @ e.T
    n = len(e)
    return float((c.sum() - np.trace(c)) / (n * (n - 1))) if n > 1 else float("nan")


# ---------------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--orchid", default=str(REPO / "build" / "orchid"))
    ap.add_argument("--threads", type=int, default=2, help="engine / torch threads, both sides")
    ap.add_argument("--images", type=int, default=48)
    ap.add_argument("--batches", default="1,16", help="images per request / forward")
    ap.add_argument("--repeat", type=int, default=3, help="timed passes per row")
    ap.add_argument("--warmup", type=int, default=2, help="warm-up batches per row")
    ap.add_argument("--orchid-dtypes", default="float32,bfloat16",
                    help="orchid --dtype rows (int8 runs with --int8-serve-anyway)")
    ap.add_argument("--torch-variants", default="fp32,bf16-cast,bf16-autocast")
    ap.add_argument("--serve-args", default="",
                    help="more `orchid serve` flags, one string (e.g. \"--max-batch-time 0\")")
    ap.add_argument("--work", default="/tmp/orchid-clip-bench",
                    help="where the model and the servers' logs go (not committed)")
    ap.add_argument("--out", default=str(REPO / "bench" / "results"))
    ap.add_argument("--quick", action="store_true",
                    help="a short dry run: 16 images, one timed pass, one warm-up batch")
    args = ap.parse_args()
    if args.quick:
        args.images, args.repeat, args.warmup = 16, 1, 1
    bs = [int(x) for x in args.batches.split(",")]
    variants = args.torch_variants.split(",")
    if "fp32" not in variants:
        variants.insert(0, "fp32")  # the fidelity reference
    dtypes = [d for d in args.orchid_dtypes.split(",") if d]
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    load_before = loadavg()

    # A snapshot of the binary: a rebuild during the run cannot swap it under the servers.
    src = Path(args.orchid)
    orchid = work / "orchid"
    shutil.copy2(src, orchid)
    orchid_info = {"path": str(src),
                   "mtime": datetime.datetime.fromtimestamp(src.stat().st_mtime, datetime.timezone.utc)
                   .strftime("%Y-%m-%d %H:%M:%S UTC"),
                   "sha256": hashlib.sha256(orchid.read_bytes()).hexdigest()[:16]}

    log(f"images: making {args.images}")
    images = make_images(args.images)
    model_dir = make_model(work)
    torch_side = Torch(model_dir, args.threads, "bf16-cast" in variants)
    torch_attn = torch_side.attn
    servers, serve = {}, {}
    try:
        for dt in dtypes:
            log(f"orchid serve --dtype {dt} ...")
            serve[dt] = Serve(str(orchid), model_dir, args.threads, dt, work / f"serve-{dt}.log",
                              shlex.split(args.serve_args))
        # The rows; each B's rows side by side. cpu(): this process's CPU seconds, plus the
        # server's for orchid rows (its client's base64 / JSON / HTTP work is in the first).
        rows = []
        for b in bs:
            for v in variants:
                rows.append({"engine": "PyTorch", "variant": v, "batch": b,
                             "fn": (lambda v: lambda g: torch_side.embed(v, g))(v),
                             "cpu": time.process_time})
            for dt in dtypes:
                rows.append({"engine": "orchid", "variant": dt, "batch": b, "fn": serve[dt].embed,
                             "cpu": (lambda s: lambda: time.process_time() + s.cpu_s())(serve[dt])})
        for r in rows:
            r["label"] = f"{r['engine']} {r['variant']} B={r['batch']}"
            r["groups"] = batches(images, r["batch"])
            log(f"warm-up: {r['label']}")
            for g in (r["groups"] * args.warmup)[:args.warmup]:
                r["fn"](g)
            r["rates"], r["cpu_per_image"], r["emb"] = [], [], None
        # Round after round, one timed pass of every row: the host's drift lands on all of them.
        # Meanwhile the servers' CPU time outside their own rows' passes is counted (idle cost).
        idle = {dt: 0.0 for dt in dtypes}
        for k in range(args.repeat):
            for r in rows:
                others = {dt: s.cpu_s() for dt, s in serve.items()
                          if not (r["engine"] == "orchid" and r["variant"] == dt)}
                c0 = r["cpu"]()
                dt_s, e = one_pass(r["fn"], r["groups"])
                c1 = r["cpu"]()
                for dt, c in others.items():
                    idle[dt] += serve[dt].cpu_s() - c
                r["rates"].append(len(images) / dt_s)
                r["cpu_per_image"].append((c1 - c0) / len(images))
                if r["emb"] is None:
                    r["emb"] = e
                log(f"round {k + 1}/{args.repeat}: {r['label']}: {len(images) / dt_s:.2f} images/s, "
                    f"{(c1 - c0) / len(images):.3f} CPU s / image")
        for dt, s in serve.items():
            servers[dt] = {"startup_s": round(s.startup_s, 2), "peak_rss_mib": s.peak_rss_mib(),
                           "cpu_s_outside_own_passes": round(idle[dt], 2),
                           "command": " ".join(s.cmd[1:]).replace(str(model_dir), "MODEL"),
                           "log_tail": [l for l in s.lines if l.strip()][-8:]}
    finally:
        for s in serve.values():
            s.stop()
    torch_rss = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    del torch_side
    emb = {}
    for r in rows:
        emb[("torch" if r["engine"] == "PyTorch" else "orchid", r["variant"], r["batch"])] = r.pop("emb")
        r["images_per_s"] = summary(r.pop("rates"))
        r["cpu_s_per_image"] = statistics.median(r.pop("cpu_per_image"))
        for k in ("fn", "cpu", "groups", "label"):
            r.pop(k)

    # Fidelity against PyTorch fp32 at the same B, the best PyTorch bf16 per B, the ratios.
    for r in rows:
        ref = emb[("torch", "fp32", r["batch"])]
        side = "torch" if r["engine"] == "PyTorch" else "orchid"
        c = cosines(emb[(side, r["variant"], r["batch"])], ref)
        r["cosine_vs_torch_fp32"] = {"min": float(c.min()), "mean": float(c.mean())}
    best_bf16 = {}
    for b in bs:
        cands = [r for r in rows if r["engine"] == "PyTorch" and r["variant"].startswith("bf16")
                 and r["batch"] == b]
        if cands:
            best_bf16[b] = max(cands, key=lambda r: r["images_per_s"]["median"])
    for r in rows:
        b = r["batch"]
        fp32 = next(x for x in rows if x["engine"] == "PyTorch" and x["variant"] == "fp32"
                    and x["batch"] == b)
        r["vs_torch_fp32"] = r["images_per_s"]["median"] / fp32["images_per_s"]["median"]
        if b in best_bf16:
            r["vs_torch_bf16"] = r["images_per_s"]["median"] / best_bf16[b]["images_per_s"]["median"]
        if r["engine"] == "orchid" and b in best_bf16:
            r["target_met"] = bool(r["vs_torch_bf16"] >= TARGET_RATIO and
                                   r["cosine_vs_torch_fp32"]["min"] >= TARGET_COSINE)
    spreads = {b: spread(emb[("torch", "fp32", b)]) for b in bs}
    b_max = max(bs)
    b1_vs_bmax = (float(cosines(emb[("torch", "fp32", min(bs))], emb[("torch", "fp32", b_max)]).min())
                  if len(bs) > 1 else None)

    # The floor: the vision tower's multiply-adds per image against this host's measured peaks
    # (bench/cpu/linear_bench.cpp --peak: one core's register-only FMA / vdpbf16ps rates).
    h, n_layers, inter = VISION["hidden_size"], VISION["num_hidden_layers"], VISION["intermediate_size"]
    side = VISION["image_size"] // VISION["patch_size"]
    tokens = side * side + 1
    gflop = (n_layers * (2 * tokens * (4 * h * h + 2 * h * inter) + 4 * tokens * tokens * h)
             + 2 * side * side * h * 3 * VISION["patch_size"] ** 2) / 1e9
    peaks = {}
    peak_bin = REPO / "build" / "orchid_linear_bench"
    if peak_bin.exists():
        try:
            peaks = json.loads(subprocess.run([str(peak_bin), "--peak"], capture_output=True,
                                              text=True, timeout=120).stdout)
        except (OSError, ValueError, subprocess.SubprocessError):
            peaks = {}
    for r in rows:
        r["vision_gflop_per_s"] = r["images_per_s"]["median"] * gflop
    cpu = lscpu()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(), "orchid_binary": orchid_info, "machine": cpu,
        "threads": args.threads, "images": args.images, "batches": bs, "repeat": args.repeat,
        "warmup_batches": args.warmup, "quick": args.quick, "serve_args": args.serve_args,
        "loadavg_before": load_before, "loadavg_after": loadavg(),
        "wall_s": round(time.perf_counter() - started, 1),
        "torch": torch.__version__, "transformers": transformers.__version__,
        "pillow": PIL.__version__, "numpy": np.__version__, "python": platform.python_version(),
        "torch_attn_implementation": torch_attn,
        "torch_peak_rss_mib": torch_rss, "servers": servers,
        "model": {"vision": VISION, "text_layers": 2, "text_hidden": 64, "projection_dim": 512,
                  "seed": SEED, "dir": str(model_dir)},
        "image_set": {"count": len(images), "jpeg": sum(i["mime"] == "jpeg" for i in images),
                      "png": sum(i["mime"] == "png" for i in images),
                      "sizes": [f"{w}x{h}" for w, h in SIZES],
                      "mean_bytes": int(statistics.mean(len(i["bytes"]) for i in images))},
        "torch_fp32_mean_cosine_between_images": {str(b): s for b, s in spreads.items()},
        "torch_fp32_min_cosine_b1_vs_bmax": b1_vs_bmax,
        "pytorch_bf16_choice": {str(b): r["variant"] for b, r in best_bf16.items()},
        "vision_gflop_per_image": gflop, "one_core_peaks": peaks,
    }
    out_dir = Path(args.out)
    base = out_dir / f"clip-images-{stamp}{'-quick' if args.quick else ''}"
    base.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")

    def f7(x):
        return "-" if x is None else f"{x:.7f}"

    names = {"fp32": "PyTorch fp32", "bf16-cast": "PyTorch bf16 (model.to(bfloat16))",
             "bf16-autocast": "PyTorch bf16 (autocast)"}
    md = [f"# CLIP ViT-B/16 image embeddings per second: orchid vs transformers + Pillow on "
          f"PyTorch ({stamp}{', --quick dry run' if args.quick else ''})", ""]
    if args.quick:
        md += ["**--quick dry run: 16 images, one warm-up batch, one timed pass: not a "
               "measurement.**", ""]
    md += [
        f"- machine: {cpu['model']}, {cpu['cpus']} CPUs ({cpu['threads_per_core']} thread/core"
        f"{', ' + cpu['hypervisor'] + ' guest' if cpu['hypervisor'] else ''}), {cpu['os']}, "
        f"flags: {' '.join(cpu['flags'])}",
        f"- commit: {meta['commit']}; orchid binary {orchid_info['path']} built "
        f"{orchid_info['mtime']} (sha256 {orchid_info['sha256']})",
        f"- date: {meta['date']}; wall time {meta['wall_s']} s; load average before / after: "
        f"{meta['loadavg_before']} / {meta['loadavg_after']}",
        f"- versions: torch {torch.__version__}, transformers {transformers.__version__}, "
        f"Pillow {PIL.__version__}, numpy {np.__version__}, Python {platform.python_version()}; "
        f"attention: {meta['torch_attn_implementation']}",
        f"- threads: {args.threads} on both sides (orchid `--threads`, torch.set_num_threads)"
        + (f"; more server flags: `{args.serve_args}`" if args.serve_args else ""),
        f"- model: random-weight CLIPModel, vision tower of ViT-B/16 (768 x 12 layers, 12 heads, "
        f"FFN 3072, 224 px, patch 16, quick_gelu, projection 512), seed {SEED}; "
        f"openai/clip-vit-base-patch16's image preprocessing (shortest edge 224, bicubic, "
        f"center crop 224)",
        f"- images: {len(images)} made with seed {SEED} ({meta['image_set']['jpeg']} JPEG q90, "
        f"{meta['image_set']['png']} PNG; {', '.join(meta['image_set']['sizes'])}; mean "
        f"{meta['image_set']['mean_bytes'] // 1024} KiB); {args.warmup} warm-up batches, then "
        f"{args.repeat} timed passes over all of them, the rows taking turns round after round "
        f"(both servers up all along); images/s and CPU s / image = medians over passes",
        "- orchid: `orchid serve --threads T --dtype D`, batches of B data-URI images to "
        "POST /v1/embeddings, one request at a time over a keep-alive connection; timed from the "
        "client's base64 + JSON to the parsed reply (decode, preprocess, vision tower and HTTP); "
        "CPU s / image: the server's CPU time plus the client's",
        "- PyTorch: `load_image(Image.open(BytesIO(bytes)))` + `CLIPImageProcessor` (PIL) + "
        "`get_image_features` under `inference_mode`, in-process, bytes in memory (no base64, "
        "no HTTP)",
        "- PyTorch bf16 for the ratios: the faster of `model.to(bfloat16)` and "
        "`autocast(\"cpu\", bfloat16)` at each B: " +
        ", ".join(f"B={b}: {names[r['variant']].split(' ', 2)[2]}" for b, r in best_bf16.items()),
        "- cosine: per image, against PyTorch fp32's embedding of the same image at the same B; "
        "mean cosine between different images under PyTorch fp32: " +
        ", ".join(f"B={b}: {s:.4f}" for b, s in spreads.items()) +
        (f"; PyTorch fp32 B={min(bs)} vs B={b_max}: min cosine {b1_vs_bmax:.7f}"
         if b1_vs_bmax is not None else ""),
        "",
        "| side | B | images/s (median) | passes | ms / image | CPU s / image | vs PyTorch bf16 "
        "| vs PyTorch fp32 | min cosine | mean cosine |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for b in bs:
        for r in (x for x in rows if x["batch"] == b):
            name = names.get(r["variant"], r["variant"]) if r["engine"] == "PyTorch" else \
                f"orchid {r['variant']}"
            if r["engine"] == "PyTorch" and best_bf16.get(b) is r:
                name += " *"
            ips = r["images_per_s"]
            vs_bf16 = f"{r['vs_torch_bf16']:.2f}x" if "vs_torch_bf16" in r else "-"
            md.append(f"| {name} | {b} | {ips['median']:.2f} | "
                      f"{' '.join(f'{p:.2f}' for p in ips['passes'])} | {1000 / ips['median']:.1f} | "
                      f"{r['cpu_s_per_image']:.3f} | "
                      f"{vs_bf16} | "
                      f"{r['vs_torch_fp32']:.2f}x | "
                      f"{f7(r['cosine_vs_torch_fp32']['min'])} | "
                      f"{f7(r['cosine_vs_torch_fp32']['mean'])} |")
    md += ["", "\\* the PyTorch bf16 the ratios use at that B.", "",
           f"Target (issue 43): orchid >= {TARGET_RATIO:g}x PyTorch bf16 images/s on the CPU at "
           f">= {TARGET_COSINE} cosine (min over images) against PyTorch fp32:", ""]
    for r in rows:
        if r["engine"] == "orchid" and "target_met" in r:
            md.append(f"- orchid {r['variant']}, B={r['batch']}: {r['vs_torch_bf16']:.2f}x, min cosine "
                      f"{r['cosine_vs_torch_fp32']['min']:.7f}: "
                      f"{'met' if r['target_met'] else 'not met'}")
    if peaks.get("bf16_peak_gflops"):
        bf16_peak = peaks["bf16_peak_gflops"] * args.threads
        fastest = max((r for r in rows if r["engine"] == "PyTorch"),
                      key=lambda r: r["images_per_s"]["median"])
        need = TARGET_RATIO * fastest["vision_gflop_per_s"]
        md += ["", f"The floor: the vision tower is {gflop:.1f} GFLOP per image (multiply-adds x 2, "
               f"{tokens} tokens). This host's measured peaks (`build/orchid_linear_bench --peak`, "
               f"one core): fp32 FMA {peaks['peak_gflops']:.0f} GFLOP/s, bf16 dot products "
               f"(vdpbf16ps) {peaks['bf16_peak_gflops']:.0f} GFLOP/s, int8 (VNNI) "
               f"{peaks['vnni_peak_gops']:.0f} GOP/s. The fastest PyTorch row "
               f"({names.get(fastest['variant'], fastest['variant'])}, B={fastest['batch']}) runs "
               f"the tower at {fastest['vision_gflop_per_s']:.0f} GFLOP/s, decoding included; "
               f"{TARGET_RATIO:g}x that is {need:.0f} GFLOP/s, {100 * need / bf16_peak:.0f}% of "
               f"{args.threads} cores' bf16 peak ({bf16_peak:.0f} GFLOP/s)."]
        md += [f"- {'orchid ' + r['variant'] if r['engine'] == 'orchid' else names.get(r['variant'], r['variant'])}"
               f", B={r['batch']}: {r['vision_gflop_per_s']:.0f} GFLOP/s = "
               f"{100 * r['vision_gflop_per_s'] / bf16_peak:.0f}% of the bf16 peak"
               for r in rows]
    md += ["", "Memory (peak RSS): PyTorch process (fp32 + bf16 copies of the model) "
           f"{torch_rss} MiB; " + "; ".join(f"orchid {d} {s['peak_rss_mib']} MiB (start-up "
                                             f"{s['startup_s']} s, {s['cpu_s_outside_own_passes']} CPU s while "
                                             f"the other rows ran)" for d, s in servers.items()),
           "", f"Made by `bench/image/run-clip.sh{' --quick' if args.quick else ''}`; "
           f"raw numbers in {base.name}.json."]
    base.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    log(f"wrote {base}.md / .json")


if __name__ == "__main__":
    main()
