// PNG through libpng's progressive-free classic API with no colour transforms (no gamma, no
// tRNS expansion, no alpha handling): the samples as stored, converted to RGB the way Pillow's
// PNG modes ("1", "L", "I;16", "RGB", "P", "LA", "RGBA") convert with convert("RGB").
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "image/decoders.h"

namespace orchid::image::internal {
namespace {

struct PngContext {
  std::span<const uint8_t> data;
  size_t pos = 0;
  char message[256] = {};
};

[[noreturn]] void PngError(png_structp png, png_const_charp msg) {
  auto* ctx = static_cast<PngContext*>(png_get_error_ptr(png));
  std::snprintf(ctx->message, sizeof ctx->message, "%s", msg);
  png_longjmp(png, 1);
}
void PngWarning(png_structp, png_const_charp) {}

void PngRead(png_structp png, png_bytep out, png_size_t n) {
  auto* ctx = static_cast<PngContext*>(png_get_io_ptr(png));
  if (n > ctx->data.size() - ctx->pos) png_error(png, "truncated PNG data");
  std::memcpy(out, ctx->data.data() + ctx->pos, n);
  ctx->pos += n;
}

struct PngRun {
  PngContext ctx;
  png_structp png = nullptr;
  png_infop info = nullptr;
  png_infop end_info = nullptr;
  ~PngRun() { png_destroy_read_struct(&png, &info, &end_info); }
};

Status Create(PngRun& run, std::span<const uint8_t> bytes) {
  run.ctx.data = bytes;
  run.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &run.ctx, PngError, PngWarning);
  if (run.png == nullptr) return Status::ResourceExhausted("libpng: out of memory");
  run.info = png_create_info_struct(run.png);
  run.end_info = png_create_info_struct(run.png);
  if (run.info == nullptr || run.end_info == nullptr) {
    return Status::ResourceExhausted("libpng: out of memory");
  }
  png_set_read_fn(run.png, &run.ctx, PngRead);
  // Benign errors (extra IDAT data, bad ancillary chunks) as warnings, as Pillow tolerates them;
  // palette indices past the palette are black, as in Pillow, not an error.
  png_set_benign_errors(run.png, 1);
  png_set_check_for_invalid_index(run.png, 0);
  png_set_chunk_cache_max(run.png, 1000);
  png_set_chunk_malloc_max(run.png, 16u << 20);
  // Sizes are checked against DecodeLimits after png_read_info (an OutOfRange, not a corrupt
  // file); libpng's own default cap of 1e6 per side would answer first otherwise.
  png_set_user_limits(run.png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);
  return Status::Ok();
}

std::string_view Text(const png_text& t) {
  return {t.text, t.text_length != 0 ? t.text_length : t.itxt_length};
}

// Pillow's "Raw profile type exif": "\nexif\n<length>\n<hex lines>"; lines 3.. are hex.
std::vector<uint8_t> RawProfileExif(std::string_view text) {
  size_t p = 0;
  for (int i = 0; i < 3 && p != std::string_view::npos; ++i) {
    p = text.find('\n', p);
    if (p != std::string_view::npos) ++p;
  }
  std::vector<uint8_t> out;
  if (p == std::string_view::npos) return out;
  int hi = -1;
  for (; p < text.size(); ++p) {
    const char c = text[p];
    int v;
    if (c >= '0' && c <= '9')
      v = c - '0';
    else if (c >= 'a' && c <= 'f')
      v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      v = c - 'A' + 10;
    else if (c == '\n' || c == ' ' || c == '\t' || c == '\r')
      continue;
    else
      return {};
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(uint8_t(hi << 4 | v));
      hi = -1;
    }
  }
  return hi < 0 ? out : std::vector<uint8_t>{};
}

void ReadMetadata(png_structp png, png_infop info, DecodedFrame& out, std::vector<uint8_t>& raw) {
  png_uint_32 n = 0;
  png_bytep exif = nullptr;
  if (out.exif.empty() && png_get_eXIf_1(png, info, &n, &exif) != 0 && exif != nullptr) {
    out.exif.assign(exif, exif + n);
  }
  png_textp texts = nullptr;
  int num_text = 0;
  if (png_get_text(png, info, &texts, &num_text) > 0) {
    for (int i = 0; i < num_text; ++i) {
      const std::string_view key = texts[i].key;
      if (key == "XML:com.adobe.xmp") out.xmp = std::string(Text(texts[i]));
      if (key == "Raw profile type exif") raw = RawProfileExif(Text(texts[i]));
    }
  }
}

Status DecodeInto(PngRun& run, const DecodeLimits& limits, std::vector<png_bytep>& rows,
                  std::vector<uint8_t>& samples, std::vector<uint8_t>& raw_exif,
                  DecodedFrame& out) {
  if (setjmp(png_jmpbuf(run.png)) != 0) {
    return Status::InvalidArgument(std::string("corrupt PNG: ") + run.ctx.message);
  }
  png_read_info(run.png, run.info);
  png_uint_32 w = 0, h = 0;
  int depth = 0, color = 0, interlace = 0;
  png_get_IHDR(run.png, run.info, &w, &h, &depth, &color, &interlace, nullptr, nullptr);
  ORCHID_RETURN_IF_ERROR(CheckDimensions("PNG", w, h, limits));
  ReadMetadata(run.png, run.info, out, raw_exif);

  // The palette as Pillow holds it: 256 entries, those past PLTE black.
  uint8_t palette[256 * 3] = {};
  if (color == PNG_COLOR_TYPE_PALETTE) {
    png_colorp plte = nullptr;
    int num = 0;
    if (png_get_PLTE(run.png, run.info, &plte, &num) == 0) {
      return Status::InvalidArgument("corrupt PNG: palette image without a PLTE chunk");
    }
    for (int i = 0; i < num && i < 256; ++i) {
      palette[3 * i] = plte[i].red;
      palette[3 * i + 1] = plte[i].green;
      palette[3 * i + 2] = plte[i].blue;
    }
  }
  if (depth < 8) {
    if (color == PNG_COLOR_TYPE_GRAY)
      png_set_expand_gray_1_2_4_to_8(run.png);  // x255, x85, x17
    else
      png_set_packing(run.png);  // one index a byte
  }
  png_set_interlace_handling(run.png);
  png_read_update_info(run.png, run.info);
  const size_t rowbytes = png_get_rowbytes(run.png, run.info);
  samples.resize(rowbytes * h);
  rows.resize(h);
  for (png_uint_32 y = 0; y < h; ++y) rows[y] = samples.data() + rowbytes * y;
  png_read_image(run.png, rows.data());

  out.rgb = RgbImage(int(w), int(h));
  const bool wide = depth == 16;
  for (png_uint_32 y = 0; y < h; ++y) {
    const uint8_t* in = rows[y];
    uint8_t* o = out.rgb.row(int(y));
    for (png_uint_32 x = 0; x < w; ++x, o += 3) {
      switch (color) {
        case PNG_COLOR_TYPE_GRAY: {
          // "I;16" to "RGB" clips at 255 (Pillow's I16_RGB), it does not scale.
          const uint8_t v = wide ? (in[2 * x] == 0 ? in[2 * x + 1] : 255) : in[x];
          o[0] = o[1] = o[2] = v;
          break;
        }
        case PNG_COLOR_TYPE_GRAY_ALPHA:  // "LA" / "LA;16B": the grey sample's first byte
          o[0] = o[1] = o[2] = in[x * (wide ? 4 : 2)];
          break;
        case PNG_COLOR_TYPE_RGB:
        case PNG_COLOR_TYPE_RGB_ALPHA: {  // 16-bit: the most significant bytes
          const size_t step = (color == PNG_COLOR_TYPE_RGB ? 3 : 4) * (wide ? 2 : 1);
          const uint8_t* p = in + x * step;
          for (int c = 0; c < 3; ++c) o[c] = p[c * (wide ? 2 : 1)];
          break;
        }
        case PNG_COLOR_TYPE_PALETTE:
          std::memcpy(o, palette + 3 * in[x], 3);
          break;
        default:
          return Status::InvalidArgument("corrupt PNG: colour type " + std::to_string(color));
      }
    }
  }
  return Status::Ok();
}

// Chunks after the image data: read for a late eXIf / text, but their damage (a missing IEND,
// a truncated trailer) is ignored, as Pillow's load_end ignores it.
void ReadEnd(PngRun& run, std::vector<uint8_t>& raw_exif, DecodedFrame& out) {
  if (setjmp(png_jmpbuf(run.png)) != 0) return;
  png_read_end(run.png, run.end_info);
  ReadMetadata(run.png, run.end_info, out, raw_exif);
}

Status ReadHeaderInto(PngRun& run, ImageHeader* header) {
  if (setjmp(png_jmpbuf(run.png)) != 0) {
    return Status::InvalidArgument(std::string("corrupt PNG header: ") + run.ctx.message);
  }
  png_read_info(run.png, run.info);
  *header = {ImageFormat::kPng, int(png_get_image_width(run.png, run.info)),
             int(png_get_image_height(run.png, run.info))};
  return Status::Ok();
}

}  // namespace

Result<ImageHeader> ReadPngHeader(std::span<const uint8_t> bytes) {
  PngRun run;
  ORCHID_RETURN_IF_ERROR(Create(run, bytes));
  ImageHeader header;
  ORCHID_RETURN_IF_ERROR(ReadHeaderInto(run, &header));
  return header;
}

Result<DecodedFrame> DecodePng(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  PngRun run;
  ORCHID_RETURN_IF_ERROR(Create(run, bytes));
  std::vector<png_bytep> rows;
  std::vector<uint8_t> samples, raw_exif;
  DecodedFrame out;
  ORCHID_RETURN_IF_ERROR(DecodeInto(run, limits, rows, samples, raw_exif, out));
  ReadEnd(run, raw_exif, out);
  if (out.exif.empty() && !raw_exif.empty()) out.exif = std::move(raw_exif);
  return out;
}

}  // namespace orchid::image::internal
