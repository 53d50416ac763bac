// WebP through libwebp's animation decoder (libwebpdemux), the API Pillow's _webp.c uses for
// every WebP, still or animated, with the same default options (RGBA output, no threads): the
// first frame composed on its canvas, alpha then dropped as convert("RGB") drops it.
#include <webp/decode.h>
#include <webp/demux.h>

#include <cstring>
#include <memory>
#include <string>

#include "image/decoders.h"

namespace orchid::image::internal {
namespace {

struct DemuxDelete {
  void operator()(WebPDemuxer* d) const { WebPDemuxDelete(d); }
};
struct AnimDelete {
  void operator()(WebPAnimDecoder* d) const { WebPAnimDecoderDelete(d); }
};

std::string FirstChunk(const WebPDemuxer* demux, const char fourcc[5]) {
  WebPChunkIterator it;
  std::string out;
  if (WebPDemuxGetChunk(demux, fourcc, 1, &it)) {
    out.assign(reinterpret_cast<const char*>(it.chunk.bytes), it.chunk.size);
    WebPDemuxReleaseChunkIterator(&it);
  }
  return out;
}

}  // namespace

Result<ImageHeader> ReadWebpHeader(std::span<const uint8_t> bytes) {
  WebPBitstreamFeatures f;
  if (WebPGetFeatures(bytes.data(), bytes.size(), &f) != VP8_STATUS_OK) {
    return Status::InvalidArgument("corrupt WebP header");
  }
  return ImageHeader{ImageFormat::kWebp, f.width, f.height};
}

Result<DecodedFrame> DecodeWebp(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  const WebPData data{bytes.data(), bytes.size()};
  // The canvas size first, from the container alone: the animation decoder allocates the canvas
  // when it is created.
  std::unique_ptr<WebPDemuxer, DemuxDelete> demux(WebPDemux(&data));
  if (demux == nullptr) return Status::InvalidArgument("corrupt or truncated WebP container");
  const int64_t w = WebPDemuxGetI(demux.get(), WEBP_FF_CANVAS_WIDTH);
  const int64_t h = WebPDemuxGetI(demux.get(), WEBP_FF_CANVAS_HEIGHT);
  ORCHID_RETURN_IF_ERROR(CheckDimensions("WebP", w, h, limits));

  DecodedFrame out;
  const std::string exif = FirstChunk(demux.get(), "EXIF");
  out.exif.assign(exif.begin(), exif.end());
  out.xmp = FirstChunk(demux.get(), "XMP ");
  demux.reset();

  std::unique_ptr<WebPAnimDecoder, AnimDelete> dec(WebPAnimDecoderNew(&data, nullptr));
  if (dec == nullptr) return Status::InvalidArgument("corrupt WebP: cannot start the decoder");
  WebPAnimInfo info;
  if (!WebPAnimDecoderGetInfo(dec.get(), &info) || info.canvas_width != uint32_t(w) ||
      info.canvas_height != uint32_t(h)) {
    return Status::InvalidArgument("corrupt WebP: inconsistent canvas");
  }
  uint8_t* rgba = nullptr;
  int timestamp = 0;
  if (!WebPAnimDecoderGetNext(dec.get(), &rgba, &timestamp) || rgba == nullptr) {
    return Status::InvalidArgument("corrupt WebP: the first frame does not decode");
  }
  out.rgb = RgbImage(int(w), int(h));
  const size_t n = size_t(w) * size_t(h);
  uint8_t* o = out.rgb.pixels.data();
  for (size_t i = 0; i < n; ++i) {
    o[3 * i] = rgba[4 * i];
    o[3 * i + 1] = rgba[4 * i + 1];
    o[3 * i + 2] = rgba[4 * i + 2];
  }
  return out;
}

}  // namespace orchid::image::internal
