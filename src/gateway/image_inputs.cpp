#include "gateway/image_inputs.h"

#include <cstring>
#include <span>

#include "gateway/base64.h"
#include "gateway/image_fetch.h"
#include "image/preprocess.h"

namespace orchid {
namespace {

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    if (c != prefix[i]) return false;
  }
  return true;
}

// Base64 as clients send it: padded or not, whitespace (line breaks) ignored.
std::optional<std::string> DecodeLenientBase64(std::string_view text) {
  std::string clean;
  clean.reserve(text.size() + 3);
  for (char c : text) {
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') clean.push_back(c);
  }
  while (clean.size() % 4 != 0) clean.push_back('=');
  return Base64Decode(clean);
}

}  // namespace

bool IsImageDataUri(std::string_view s) { return StartsWithNoCase(s, "data:image/"); }

std::optional<ApiError> ParseImageSource(std::string_view s, bool allow_bare_base64,
                                         const std::string& param, ImageSource* out) {
  *out = ImageSource{};
  if (StartsWithNoCase(s, "http://") || StartsWithNoCase(s, "https://")) {
    out->url = std::string(s);
    return std::nullopt;
  }
  std::string_view payload = s;
  if (StartsWithNoCase(s, "data:")) {
    const size_t comma = s.find(',');
    if (comma == std::string_view::npos) {
      return ApiError::InvalidRequest(param + " is a data URI without a comma", param,
                                      "invalid_image");
    }
    const std::string_view header = s.substr(5, comma - 5);
    if (!StartsWithNoCase(header, "image/")) {
      return ApiError::InvalidRequest(
          param + " is a data URI of `" + std::string(header) + "`, not of an image", param,
          "invalid_image");
    }
    if (header.size() < 7 || header.substr(header.size() - 7) != ";base64") {
      return ApiError::InvalidRequest(param + ": only base64 data URIs are supported", param,
                                      "invalid_image");
    }
    payload = s.substr(comma + 1);
  } else if (!allow_bare_base64) {
    return ApiError::InvalidRequest(
        param + " is not an image: send a data URI (data:image/png;base64,...)", param,
        "invalid_image");
  }
  std::optional<std::string> bytes = DecodeLenientBase64(payload);
  if (!bytes || bytes->empty()) {
    return ApiError::InvalidRequest(param + ": the image's base64 is not valid", param,
                                    "invalid_image");
  }
  out->bytes = std::move(*bytes);
  return std::nullopt;
}

Result<ImagePreparer> ImagePreparer::Create(const image::ImageProcessorConfig& config,
                                            const ImageInput& input, ImageLimits limits) {
  if (!input.enabled()) return Status::InvalidArgument("the model has no vision tower");
  // The processor's output size for any picture (crop, or the fixed resize).
  int h = 0, w = 0;
  if (config.do_center_crop) {
    h = config.crop_height, w = config.crop_width;
  } else if (config.do_resize && config.shortest_edge == 0) {
    h = config.height, w = config.width;
  }
  if (h != input.image_size || w != input.image_size) {
    return Status::InvalidArgument(
        "the image processor makes " + std::to_string(h) + " x " + std::to_string(w) +
        " pictures (a centre crop or a fixed resize), the vision tower takes " +
        std::to_string(input.image_size) + " x " + std::to_string(input.image_size));
  }
  return ImagePreparer(config, input, limits);
}

Status ImagePreparer::Prepare(const ImageSource& source, std::vector<int32_t>* ids,
                              std::vector<float>* pixels) const {
  std::string fetched;
  if (!source.url.empty()) {
    if (limits_.fetch_hosts.empty()) {
      return Status::InvalidArgument(
          "image URLs are not fetched by this server (fetching URLs a request names would let "
          "any client make the server call any host; --image-fetch-hosts lists the hosts it "
          "may fetch from); send the image as a data URI (data:image/jpeg;base64,...)");
    }
    ImageFetchOptions fetch;
    fetch.hosts = limits_.fetch_hosts;
    fetch.max_bytes = limits_.max_encoded_bytes;
    ORCHID_ASSIGN_OR_RETURN(fetched, FetchImage(source.url, fetch));
  }
  const std::string& encoded = source.url.empty() ? source.bytes : fetched;
  if (encoded.size() > limits_.max_encoded_bytes) {
    return Status::OutOfRange("the image is " + std::to_string(encoded.size()) +
                              " bytes, more than the " + std::to_string(limits_.max_encoded_bytes) +
                              " this server takes");
  }
  image::DecodeLimits decode;
  decode.max_encoded_bytes = limits_.max_encoded_bytes;
  decode.max_pixels = limits_.max_pixels;
  decode.max_jpeg_scans = limits_.max_jpeg_scans;
  const auto* data = reinterpret_cast<const uint8_t*>(encoded.data());
  ORCHID_ASSIGN_OR_RETURN(
      image::RgbImage rgb,
      image::DecodeImage(std::span<const uint8_t>(data, encoded.size()), decode));
  ORCHID_ASSIGN_OR_RETURN(Tensor values, image::Preprocess(rgb, config_));
  const int S = input_.image_size, p = input_.patch_size, side = S / p;
  if (values.rank() != 3 || values.dim(0) != 3 || values.dim(1) != S || values.dim(2) != S) {
    return Status::Internal("preprocessing gave " + values.ShapeString() + ", not [3, " +
                            std::to_string(S) + ", " + std::to_string(S) + "]");
  }
  const size_t width = size_t(input_.patch_dim());
  const int tokens = input_.tokens();
  ids->assign(size_t(tokens), 0);
  pixels->assign(size_t(tokens) * width, 0.0f);
  const int first = input_.class_token ? 1 : 0;
  if (input_.class_token) (*ids)[0] = 1;
  const float* v = values.data();
  for (int py = 0; py < side; ++py) {
    for (int px = 0; px < side; ++px) {
      float* row = pixels->data() + size_t(first + py * side + px) * width;
      for (int c = 0; c < 3; ++c) {
        for (int ky = 0; ky < p; ++ky) {
          const float* src = v + (size_t(c) * S + size_t(py * p + ky)) * S + size_t(px * p);
          std::memcpy(row + (size_t(c) * p + size_t(ky)) * p, src, size_t(p) * sizeof(float));
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace orchid
