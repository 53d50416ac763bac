#include "image/processor_config.h"

#include <simdjson.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace orchid::image {
namespace {

using simdjson::dom::element;

struct Reader {
  element obj;
  std::string source;

  Status Error(std::string_view key, const std::string& what) const {
    return Status::InvalidArgument(source + ": \"" + std::string(key) + "\" " + what);
  }
  bool Present(std::string_view key) const {
    element v;
    return obj[key].get(v) == simdjson::SUCCESS && !v.is_null();
  }
  Result<bool> Bool(std::string_view key, bool fallback) const {
    element v;
    if (obj[key].get(v) != simdjson::SUCCESS || v.is_null()) return fallback;
    bool b;
    if (v.get(b) != simdjson::SUCCESS) return Error(key, "must be true or false");
    return b;
  }
  static bool Number(element v, double* out) {
    if (v.is_int64()) {
      *out = double(int64_t(v));
      return true;
    }
    if (v.is_uint64()) {
      *out = double(uint64_t(v));
      return true;
    }
    return v.get(*out) == simdjson::SUCCESS;
  }
  Result<double> Double(std::string_view key, double fallback) const {
    element v;
    if (obj[key].get(v) != simdjson::SUCCESS || v.is_null()) return fallback;
    double d;
    if (!Number(v, &d) || !std::isfinite(d)) return Error(key, "must be a number");
    return d;
  }
  // A float or a list of 3 (transformers repeats a single value per channel).
  Result<std::array<double, 3>> Triple(std::string_view key, std::array<double, 3> fallback) const {
    element v;
    if (obj[key].get(v) != simdjson::SUCCESS || v.is_null()) return fallback;
    std::array<double, 3> out{};
    double d;
    if (Number(v, &d)) {
      out.fill(d);
      return out;
    }
    simdjson::dom::array a;
    if (v.get(a) != simdjson::SUCCESS || a.size() != 3) {
      return Error(key, "must be a number or a list of 3 numbers");
    }
    size_t i = 0;
    for (element e : a) {
      if (!Number(e, &out[i]) || !std::isfinite(out[i])) return Error(key, "must hold numbers");
      ++i;
    }
    return out;
  }
};

Status CheckSide(const Reader& r, std::string_view key, int64_t v, int* out) {
  if (v < 1 || v > 65536) return r.Error(key, "must be a size from 1 to 65536");
  *out = int(v);
  return Status::Ok();
}

// transformers' get_size_dict: an int is {"shortest_edge": n} (default_to_square=false) or
// {"height": n, "width": n}; a list is [height, width]; a dict is taken as written.
Status ReadSize(const Reader& r, std::string_view key, bool default_to_square, int* shortest,
                int* height, int* width) {
  element v;
  if (r.obj[key].get(v) != simdjson::SUCCESS || v.is_null()) return Status::Ok();
  *shortest = *height = *width = 0;
  int64_t n = 0;
  if (v.get(n) == simdjson::SUCCESS) {
    if (default_to_square) {
      ORCHID_RETURN_IF_ERROR(CheckSide(r, key, n, height));
      return CheckSide(r, key, n, width);
    }
    return CheckSide(r, key, n, shortest);
  }
  simdjson::dom::array a;
  if (v.get(a) == simdjson::SUCCESS) {
    if (a.size() != 2) return r.Error(key, "as a list must be [height, width]");
    int64_t h = 0, w = 0;
    if (a.at(0).get(h) != simdjson::SUCCESS || a.at(1).get(w) != simdjson::SUCCESS) {
      return r.Error(key, "must hold integers");
    }
    ORCHID_RETURN_IF_ERROR(CheckSide(r, key, h, height));
    return CheckSide(r, key, w, width);
  }
  simdjson::dom::object o;
  if (v.get(o) != simdjson::SUCCESS) return r.Error(key, "must be an integer, a list or an object");
  int64_t se = 0, h = 0, w = 0;
  const bool has_se = o["shortest_edge"].get(se) == simdjson::SUCCESS;
  const bool has_hw =
      o["height"].get(h) == simdjson::SUCCESS && o["width"].get(w) == simdjson::SUCCESS;
  if (has_se) {
    // CLIP's resize reads shortest_edge first and ignores the rest ("longest_edge").
    return CheckSide(r, key, se, shortest);
  }
  if (has_hw) {
    ORCHID_RETURN_IF_ERROR(CheckSide(r, key, h, height));
    return CheckSide(r, key, w, width);
  }
  return r.Error(key, "must have \"shortest_edge\" or \"height\" and \"width\"");
}

}  // namespace

std::pair<int, int> ImageProcessorConfig::OutputSize(int in_height, int in_width) const {
  int h = in_height, w = in_width;
  if (do_resize) {
    if (shortest_edge > 0) {
      const bool portrait = in_width <= in_height;
      const int s = portrait ? in_width : in_height, l = portrait ? in_height : in_width;
      // Python's int(n * long / short): an exact product, one correctly rounded division.
      const int new_long = int(double(int64_t(shortest_edge) * l) / double(s));
      h = portrait ? new_long : shortest_edge;
      w = portrait ? shortest_edge : new_long;
    } else {
      h = height;
      w = width;
    }
  }
  if (do_center_crop) {
    h = crop_height;
    w = crop_width;
  }
  return {h, w};
}

Result<ImageProcessorConfig> ParseImageProcessorConfig(std::string_view json,
                                                       std::string_view source) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  element root;
  if (parser.parse(padded).get(root) != simdjson::SUCCESS || !root.is_object()) {
    return Status::InvalidArgument(std::string(source) + ": not a JSON object");
  }
  Reader r{root, std::string(source)};
  element nested;
  if (root["image_processor"].get(nested) == simdjson::SUCCESS && nested.is_object()) {
    r = Reader{nested, std::string(source) + ": image_processor"};
  }

  ImageProcessorConfig c;
  std::string_view type;
  element tv;
  if (r.obj["image_processor_type"].get(tv) != simdjson::SUCCESS ||
      tv.get(type) != simdjson::SUCCESS) {
    return r.Error("image_processor_type",
                   "is missing (CLIPImageProcessor or "
                   "SiglipImageProcessor are read)");
  }
  c.type_name = std::string(type);
  std::string_view base = type;
  if (base.ends_with("Fast")) base.remove_suffix(4);  // the same settings; the PIL path is used
  if (base == "CLIPImageProcessor") {
    c.kind = ImageProcessorKind::kClip;
    c.shortest_edge = 224;
    c.do_center_crop = true;
    c.crop_height = c.crop_width = 224;
    c.image_mean = {0.48145466, 0.4578275, 0.40821073};  // OPENAI_CLIP_MEAN
    c.image_std = {0.26862954, 0.26130258, 0.27577711};  // OPENAI_CLIP_STD
  } else if (base == "SiglipImageProcessor") {
    c.kind = ImageProcessorKind::kSiglip;
    c.height = c.width = 224;
    c.image_mean = {0.5, 0.5, 0.5};  // IMAGENET_STANDARD_MEAN
    c.image_std = {0.5, 0.5, 0.5};
  } else {
    return Status::Unimplemented(r.source + ": image_processor_type \"" + c.type_name +
                                 "\" is not supported (CLIPImageProcessor, SiglipImageProcessor)");
  }

  ORCHID_ASSIGN_OR_RETURN(c.do_resize, r.Bool("do_resize", true));
  ORCHID_RETURN_IF_ERROR(
      ReadSize(r, "size", /*default_to_square=*/false, &c.shortest_edge, &c.height, &c.width));
  if (c.kind == ImageProcessorKind::kSiglip && c.shortest_edge > 0) {
    return r.Error("size", "must give \"height\" and \"width\" for SiglipImageProcessor");
  }
  element rv;
  if (r.obj["resample"].get(rv) == simdjson::SUCCESS && !rv.is_null()) {
    int64_t n = 0;
    if (rv.get(n) != simdjson::SUCCESS) return r.Error("resample", "must be an integer");
    ORCHID_ASSIGN_OR_RETURN(c.resample, ResampleFromPil(int(n)));
  }
  if (c.kind == ImageProcessorKind::kClip) {
    ORCHID_ASSIGN_OR_RETURN(c.do_center_crop, r.Bool("do_center_crop", true));
    int unused = 0;
    ORCHID_RETURN_IF_ERROR(ReadSize(r, "crop_size", /*default_to_square=*/true, &unused,
                                    &c.crop_height, &c.crop_width));
    if (unused != 0) return r.Error("crop_size", "must give \"height\" and \"width\"");
  } else if (r.Present("do_center_crop")) {
    ORCHID_ASSIGN_OR_RETURN(bool crop, r.Bool("do_center_crop", false));
    if (crop) return r.Error("do_center_crop", "is not an option of SiglipImageProcessor");
  }
  ORCHID_ASSIGN_OR_RETURN(c.do_rescale, r.Bool("do_rescale", true));
  ORCHID_ASSIGN_OR_RETURN(c.rescale_factor, r.Double("rescale_factor", 1.0 / 255.0));
  ORCHID_ASSIGN_OR_RETURN(c.do_normalize, r.Bool("do_normalize", true));
  ORCHID_ASSIGN_OR_RETURN(c.image_mean, r.Triple("image_mean", c.image_mean));
  ORCHID_ASSIGN_OR_RETURN(c.image_std, r.Triple("image_std", c.image_std));
  if (c.do_normalize) {
    for (double s : c.image_std) {
      if (s == 0.0) return r.Error("image_std", "must not be 0");
    }
  }
  return c;
}

Result<ImageProcessorConfig> LoadImageProcessorConfig(const std::string& model_dir) {
  for (const char* name : {"preprocessor_config.json", "processor_config.json"}) {
    const std::filesystem::path path = std::filesystem::path(model_dir) / name;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) continue;
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    if (!f.good() && !f.eof()) return Status::IoError("cannot read " + path.string());
    return ParseImageProcessorConfig(ss.str(), path.string());
  }
  return Status::NotFound(model_dir + ": no preprocessor_config.json or processor_config.json");
}

}  // namespace orchid::image
