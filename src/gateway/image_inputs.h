// Images as the embeddings routes receive them, and what the engine runs of each: a dual
// encoder's (CLIP, SigLIP) vision-tower sequence (ModelInfo::ImageInput).
//
// Sources: a data URI ("data:image/png;base64,..."), bare base64 (Jina's {"image": ...}), or an
// http(s) URL — which is refused unless the server was told to fetch from that host
// (ImageLimits::fetch_hosts, --image-fetch-hosts; gateway/image_fetch.h): a server that fetches
// any URL it is sent is an SSRF hole (vLLM's CVE-2025-6242).
//
// ImagePreparer decodes (src/image: transformers' load_image with Pillow), preprocesses as the
// model's image processor says, and cuts the [3, S, S] pixel_values into the vision tower's
// token rows. Thread-safe: const after construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "description/model_info.h"
#include "gateway/api_error.h"
#include "image/decode.h"
#include "image/processor_config.h"

namespace orchid {

// One image input of a request: its encoded bytes, or the URL it names.
struct ImageSource {
  std::string bytes;
  std::string url;  // non-empty: an http(s) URL (bytes empty)
};

// Whether `s` looks like an image a client sent as a string: a data:image/ URI.
bool IsImageDataUri(std::string_view s);

// `s` as an image: a data:image/...;base64, URI, an http(s) URL, or (allow_bare_base64) plain
// base64 of the file. `param` names the input in the error (400).
std::optional<ApiError> ParseImageSource(std::string_view s, bool allow_bare_base64,
                                         const std::string& param, ImageSource* out);

struct ImageLimits {
  size_t max_images = 64;                       // per request
  size_t max_encoded_bytes = size_t(20) << 20;  // per image, after base64
  uint64_t max_pixels = uint64_t(40) << 20;     // per image, from its header
  int max_jpeg_scans = 100;
  // Hosts (or host:port) image URLs may be fetched from; empty: URLs are refused.
  std::vector<std::string> fetch_hosts;
};

class ImagePreparer {
 public:
  // Fails when the processor's output is not the vision tower's square input.
  static Result<ImagePreparer> Create(const image::ImageProcessorConfig& config,
                                      const ImageInput& input, ImageLimits limits);

  const ImageLimits& limits() const { return limits_; }
  const ImageInput& input() const { return input_; }
  // The image's token ids (1 for a class token, 0 for a patch) and pixel rows (each token's
  // patch, channel then row then column, as a convolution's weight [H, 3, p, p] flattens; zeros
  // for the class token). kInvalidArgument / kOutOfRange for input that is not a readable image
  // within the limits (the caller names the input).
  Status Prepare(const ImageSource& source, std::vector<int32_t>* ids,
                 std::vector<float>* pixels) const;

 private:
  ImagePreparer(image::ImageProcessorConfig config, ImageInput input, ImageLimits limits)
      : config_(std::move(config)), input_(input), limits_(limits) {}
  image::ImageProcessorConfig config_;
  ImageInput input_;
  ImageLimits limits_;
};

}  // namespace orchid
