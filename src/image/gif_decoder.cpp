// GIF's first frame through giflib, placed as Pillow's GifImagePlugin places frame 0: on a canvas
// the size of the logical screen, grown when the frame reaches past it, filled with the frame's
// transparency index (else index 0) and converted through the frame's palette (the local one,
// else the global one; none, or an identity grey ramp, reads indices as grey levels).
#include <gif_lib.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "image/decoders.h"

namespace orchid::image::internal {
namespace {

struct Reader {
  std::span<const uint8_t> data;
  size_t pos = 0;
};

int ReadFn(GifFileType* gif, GifByteType* out, int n) {
  auto* r = static_cast<Reader*>(gif->UserData);
  const size_t take = std::min(size_t(n < 0 ? 0 : n), r->data.size() - r->pos);
  std::memcpy(out, r->data.data() + r->pos, take);
  r->pos += take;
  return int(take);
}

struct GifClose {
  void operator()(GifFileType* g) const {
    int err = 0;
    DGifCloseFile(g, &err);
  }
};

Status GifError(const char* what, int code) {
  const char* msg = GifErrorString(code);
  return Status::InvalidArgument(std::string("corrupt GIF: ") + what + " (" +
                                 (msg != nullptr ? msg : "unknown error") + ")");
}

// The palette as Pillow uses it: 256 entries, black past the map's end; none (or an identity
// grey ramp, which Pillow reads as mode "L") maps index i to grey i.
void BuildPalette(const ColorMapObject* map, uint8_t out[256 * 3]) {
  bool ramp = true;
  if (map != nullptr) {
    for (int i = 0; i < map->ColorCount && ramp; ++i) {
      const GifColorType& c = map->Colors[i];
      ramp = c.Red == i && c.Green == i && c.Blue == i;
    }
  }
  if (map == nullptr || ramp) {
    for (int i = 0; i < 256; ++i) out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = uint8_t(i);
    return;
  }
  std::memset(out, 0, 256 * 3);
  for (int i = 0; i < map->ColorCount && i < 256; ++i) {
    out[3 * i] = map->Colors[i].Red;
    out[3 * i + 1] = map->Colors[i].Green;
    out[3 * i + 2] = map->Colors[i].Blue;
  }
}

}  // namespace

Result<ImageHeader> ReadGifHeader(std::span<const uint8_t> bytes) {
  if (bytes.size() < 10) return Status::InvalidArgument("truncated GIF header");
  return ImageHeader{ImageFormat::kGif, bytes[6] | bytes[7] << 8, bytes[8] | bytes[9] << 8};
}

Result<DecodedFrame> DecodeGif(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  ORCHID_ASSIGN_OR_RETURN(ImageHeader header, ReadGifHeader(bytes));
  ORCHID_RETURN_IF_ERROR(CheckDimensions("GIF", header.width, header.height, limits));
  Reader reader{bytes};
  int err = 0;
  std::unique_ptr<GifFileType, GifClose> gif(DGifOpen(&reader, ReadFn, &err));
  if (gif == nullptr) return GifError("cannot read the screen descriptor", err);

  int transparency = -1;
  for (;;) {
    GifRecordType type;
    if (DGifGetRecordType(gif.get(), &type) == GIF_ERROR) {
      return GifError("bad record", gif->Error);
    }
    if (type == TERMINATE_RECORD_TYPE) return Status::InvalidArgument("GIF holds no image");
    if (type == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType* ext = nullptr;
      if (DGifGetExtension(gif.get(), &code, &ext) == GIF_ERROR) {
        return GifError("bad extension", gif->Error);
      }
      // Graphic control: ext[0] is the block length, ext[1] the flags, ext[4] the index.
      if (code == GRAPHICS_EXT_FUNC_CODE && ext != nullptr && ext[0] >= 4 && (ext[1] & 1)) {
        transparency = ext[4];
      }
      while (ext != nullptr) {
        if (DGifGetExtensionNext(gif.get(), &ext) == GIF_ERROR) {
          return GifError("bad extension block", gif->Error);
        }
      }
      continue;
    }
    if (type != IMAGE_DESC_RECORD_TYPE) continue;
    if (DGifGetImageDesc(gif.get()) == GIF_ERROR) {  // fills gif->Image
      return GifError("bad image descriptor", gif->Error);
    }
    break;
  }

  const GifImageDesc& d = gif->Image;
  if (d.Width <= 0 || d.Height <= 0) return Status::InvalidArgument("GIF frame is empty");
  const int64_t cw = std::max<int64_t>(header.width, int64_t(d.Left) + d.Width);
  const int64_t ch = std::max<int64_t>(header.height, int64_t(d.Top) + d.Height);
  ORCHID_RETURN_IF_ERROR(CheckDimensions("GIF", cw, ch, limits));

  uint8_t palette[256 * 3];
  BuildPalette(d.ColorMap != nullptr ? d.ColorMap : gif->SColorMap, palette);

  std::vector<uint8_t> canvas(size_t(cw) * size_t(ch),
                              uint8_t(transparency < 0 ? 0 : transparency));
  // Rows arrive in file order; an interlaced frame sends rows 0, 8, 16.., then 4, 12.., 2, 6..,
  // then the odd ones.
  static constexpr int kStart[4] = {0, 4, 2, 1}, kStep[4] = {8, 8, 4, 2};
  const int passes = d.Interlace ? 4 : 1;
  for (int pass = 0; pass < passes; ++pass) {
    const int start = d.Interlace ? kStart[pass] : 0, step = d.Interlace ? kStep[pass] : 1;
    for (int y = start; y < d.Height; y += step) {
      uint8_t* line = canvas.data() + size_t(d.Top + y) * size_t(cw) + size_t(d.Left);
      if (DGifGetLine(gif.get(), line, d.Width) == GIF_ERROR) {
        return GifError("truncated or bad image data", gif->Error);
      }
    }
  }

  DecodedFrame out;
  out.rgb = RgbImage(int(cw), int(ch));
  uint8_t* o = out.rgb.pixels.data();
  for (size_t i = 0; i < canvas.size(); ++i) std::memcpy(o + 3 * i, palette + 3 * canvas[i], 3);
  return out;
}

}  // namespace orchid::image::internal
