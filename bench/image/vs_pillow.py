#!/usr/bin/env python3
"""Decode + preprocess alone: orchid's src/image (orchid_image_bench) against transformers'
load_image + CLIP / SigLIP image processors on Pillow (issue 43). Both single-threaded, same
encoded bytes already in memory, medians over --repeat runs after one warm-up.

    bench/image/run.sh            (builds orchid_image_bench, runs this with the peers' venv)

Writes bench/results/image-preprocess-<date>.{json,md}: machine, commit, versions, and per
image x config the median decode and preprocess times of each side and their ratio.
"""
import argparse
import datetime
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import PIL
import transformers
from PIL import Image
from transformers import CLIPImageProcessor, SiglipImageProcessor
from transformers.image_utils import load_image

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "fixtures" / "images"))
from make_fixtures import content  # noqa: E402  (the fixtures' picture generator)

CONFIGS = {
    "clip-224": {"image_processor_type": "CLIPImageProcessor"},  # ViT-B/16 defaults
    "siglip-224": {"image_processor_type": "SiglipImageProcessor",
                   "size": {"height": 224, "width": 224}, "resample": 2},
}


def make_images(d):
    imgs = {}
    big = Image.fromarray(content(1080, 1920, 101))
    big.save(d / "photo-1920x1080.jpg", quality=90)
    imgs["photo-1920x1080.jpg"] = "JPEG 4:2:0 q90"
    mid = Image.fromarray(content(768, 1024, 102))
    mid.save(d / "photo-1024x768.png")
    imgs["photo-1024x768.png"] = "PNG RGB 8-bit"
    mid.save(d / "photo-1024x768.webp", quality=85)
    imgs["photo-1024x768.webp"] = "WebP lossy q85"
    Image.fromarray(content(480, 640, 103)).save(d / "photo-640x480.jpg", quality=85)
    imgs["photo-640x480.jpg"] = "JPEG 4:2:0 q85"
    return imgs


def time_pillow(data, proc, repeat):
    t_dec, t_pre = [], []
    for i in range(repeat + 1):
        t0 = time.perf_counter()
        im = load_image(Image.open(io.BytesIO(data)))
        t1 = time.perf_counter()
        proc(images=im, return_tensors="np", input_data_format="channels_last")
        t2 = time.perf_counter()
        if i:
            t_dec.append((t1 - t0) * 1e6)
            t_pre.append((t2 - t1) * 1e6)
    return statistics.median(t_dec), statistics.median(t_pre)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(REPO / "build" / "orchid_image_bench"))
    ap.add_argument("--repeat", type=int, default=31)
    ap.add_argument("--out", default=str(REPO / "bench" / "results"))
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        imgs = make_images(d)
        for cname, cfg in CONFIGS.items():
            cfg_path = d / f"{cname}.json"
            cfg_path.write_text(json.dumps(cfg))
            kw = {k: v for k, v in cfg.items() if k != "image_processor_type"}
            proc = (CLIPImageProcessor if cfg["image_processor_type"].startswith("CLIP")
                    else SiglipImageProcessor)(**kw)
            out = subprocess.run([args.bin, "--config", str(cfg_path), "--repeat",
                                  str(args.repeat), *[str(d / n) for n in imgs]],
                                 capture_output=True, text=True, check=True).stdout
            ours = {Path(j["file"]).name: j for j in map(json.loads, out.splitlines())}
            for name, desc in imgs.items():
                p_dec, p_pre = time_pillow((d / name).read_bytes(), proc, args.repeat)
                o = ours[name]
                rows.append({
                    "image": name, "kind": desc, "config": cname,
                    "pillow_decode_us": round(p_dec, 1), "pillow_preprocess_us": round(p_pre, 1),
                    "orchid_decode_us": o["decode_us"], "orchid_preprocess_us": o["preprocess_us"],
                    "speedup_total": round((p_dec + p_pre) / (o["decode_us"] + o["preprocess_us"]), 2),
                })
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), platform.processor())
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": commit, "cpu": cpu, "cores": os.cpu_count(), "threads": 1,
            "repeat": args.repeat, "pillow": PIL.__version__,
            "transformers": transformers.__version__, "numpy": np.__version__,
            "python": platform.python_version()}
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    out_dir = Path(args.out)
    (out_dir / f"image-preprocess-{stamp}.json").write_text(
        json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    md = [f"# Image decode + preprocess: orchid src/image vs transformers + Pillow ({stamp})", "",
          "Single thread each, encoded bytes in memory, median of "
          f"{args.repeat} runs after a warm-up; microseconds. Pillow side: "
          "`load_image(Image.open(BytesIO(b)))` then the slow (PIL) image processor with "
          "`return_tensors=\"np\"`. orchid side: `DecodeImage`, then `ResizeAndCrop` + "
          "`ToPixelValues` (bench/image/image_bench.cpp).", "",
          "| " + " | ".join(f"{k}: {v}" for k, v in meta.items()) + " |", "",
          "| image | config | Pillow decode | Pillow preprocess | orchid decode | orchid preprocess "
          "| total speedup |", "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        md.append(f"| {r['image']} ({r['kind']}) | {r['config']} | {r['pillow_decode_us']:.0f} | "
                  f"{r['pillow_preprocess_us']:.0f} | {r['orchid_decode_us']:.0f} | "
                  f"{r['orchid_preprocess_us']:.0f} | {r['speedup_total']:.2f}x |")
    (out_dir / f"image-preprocess-{stamp}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
