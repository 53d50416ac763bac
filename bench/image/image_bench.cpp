// Decode + preprocess alone (issue 43's "against Pillow" half of the image benchmark):
//   orchid_image_bench --config preprocessor_config.json [--repeat N] [--dump DIR] FILE...
// For each file: the median over N runs of decode (DecodeImage) and of preprocess (resize, crop,
// rescale, normalise) in microseconds, one JSON line per file. --dump writes, per file,
// NAME.decoded.rgb, NAME.resized.rgb (uint8 HWC) and NAME.pixel_values.f32 (float32 CHW) with a
// NAME.json of their shapes, for bench/image/compare_pillow.py.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "image/decode.h"
#include "image/preprocess.h"

namespace {

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void Write(const std::filesystem::path& path, const void* data, size_t n) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), std::streamsize(n));
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path, dump;
  int repeat = 1;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--config" && i + 1 < argc)
      config_path = argv[++i];
    else if (a == "--repeat" && i + 1 < argc)
      repeat = std::max(1, std::atoi(argv[++i]));
    else if (a == "--dump" && i + 1 < argc)
      dump = argv[++i];
    else
      files.push_back(a);
  }
  if (config_path.empty() || files.empty()) {
    std::fprintf(stderr, "usage: %s --config FILE [--repeat N] [--dump DIR] IMAGE...\n", argv[0]);
    return 2;
  }
  const std::vector<uint8_t> cfg_bytes = ReadAll(config_path);
  auto config = orchid::image::ParseImageProcessorConfig(
      std::string_view(reinterpret_cast<const char*>(cfg_bytes.data()), cfg_bytes.size()),
      config_path);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
    return 1;
  }
  int failures = 0;
  for (const std::string& file : files) {
    const std::vector<uint8_t> bytes = ReadAll(file);
    std::vector<double> t_decode, t_pre;
    orchid::image::RgbImage decoded, resized;
    orchid::Tensor pixels;
    bool ok = true;
    for (int r = 0; r < repeat && ok; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      auto img = orchid::image::DecodeImage(bytes);
      const auto t1 = std::chrono::steady_clock::now();
      if (!img.ok()) {
        std::printf("{\"file\": \"%s\", \"error\": \"%s\"}\n", file.c_str(),
                    img.status().ToString().c_str());
        ok = false;
        break;
      }
      auto rc = orchid::image::ResizeAndCrop(*img, *config);
      if (!rc.ok()) {
        std::printf("{\"file\": \"%s\", \"error\": \"%s\"}\n", file.c_str(),
                    rc.status().ToString().c_str());
        ok = false;
        break;
      }
      pixels = orchid::image::ToPixelValues(*rc, *config);
      const auto t2 = std::chrono::steady_clock::now();
      t_decode.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      t_pre.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
      decoded = std::move(img).value();
      resized = std::move(rc).value();
    }
    if (!ok) {
      ++failures;
      continue;
    }
    std::printf(
        "{\"file\": \"%s\", \"width\": %d, \"height\": %d, \"decode_us\": %.1f, "
        "\"preprocess_us\": %.1f, \"repeat\": %d}\n",
        file.c_str(), decoded.width, decoded.height, Median(t_decode), Median(t_pre), repeat);
    if (!dump.empty()) {
      const std::filesystem::path base =
          std::filesystem::path(dump) / std::filesystem::path(file).filename();
      Write(base.string() + ".decoded.rgb", decoded.pixels.data(), decoded.pixels.size());
      Write(base.string() + ".resized.rgb", resized.pixels.data(), resized.pixels.size());
      Write(base.string() + ".pixel_values.f32", pixels.data(), pixels.numel() * sizeof(float));
      std::ofstream meta(base.string() + ".json");
      meta << "{\"decoded\": [" << decoded.height << ", " << decoded.width << "], \"resized\": ["
           << resized.height << ", " << resized.width << "]}\n";
    }
  }
  return failures == 0 ? 0 : 1;
}
