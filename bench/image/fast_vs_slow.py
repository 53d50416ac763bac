#!/usr/bin/env python3
"""transformers' torchvision ("fast") image processors against the PIL ("slow") ones that orchid
reproduces (issue 43: measure and report the difference, do not chase it).

    .venv-peers/bin/python bench/image/fast_vs_slow.py

For the test pictures (tests/fixtures/images/files) and each model of tests/fixtures/clip:
pixel_values from CLIPImageProcessorFast / SiglipImageProcessorFast against the slow processor
(max |difference|, share of values that differ), and the cosine between the image embeddings
the model computes from each. Prints a Markdown table; writes nothing.
"""
import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import AutoImageProcessor
from transformers.image_utils import load_image

REPO = Path(__file__).resolve().parents[2]
FILES = REPO / "tests" / "fixtures" / "images" / "files"
MODELS = REPO / "tests" / "fixtures" / "clip" / "models"


def main():
    torch.set_num_threads(2)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, "
          f"torchvision {__import__('torchvision').__version__}\n")
    print("| model | picture | max abs diff of pixel_values | values that differ | "
          "embedding cosine fast vs slow |")
    print("|---|---|---:|---:|---:|")
    worst = {}
    for name, cls in (("clip", transformers.CLIPModel), ("siglip", transformers.SiglipModel)):
        model = cls.from_pretrained(MODELS / name).eval()
        slow = AutoImageProcessor.from_pretrained(MODELS / name, use_fast=False)
        fast = AutoImageProcessor.from_pretrained(MODELS / name, use_fast=True)
        for f in sorted(FILES.iterdir()):
            img = load_image(str(f))
            if min(img.size) <= 3:
                continue  # transformers' channels-first guess on 3-pixel pictures (see docs)
            a = slow(img, return_tensors="pt")["pixel_values"]
            b = fast(img, return_tensors="pt")["pixel_values"]
            diff = (a - b).abs()
            with torch.inference_mode():
                ea = model.get_image_features(pixel_values=a)[0]
                eb = model.get_image_features(pixel_values=b)[0]
            cos = float(torch.nn.functional.cosine_similarity(ea, eb, dim=0))
            worst[name] = min(worst.get(name, 1.0), cos)
            print(f"| {name} | {f.name} | {float(diff.max()):.4f} | "
                  f"{float((diff > 0).float().mean()) * 100:.1f}% | {cos:.7f} |")
    print()
    for name, c in worst.items():
        print(f"- {name}: lowest cosine between the fast and the slow processor's embeddings {c:.7f}")


if __name__ == "__main__":
    sys.exit(main())
