// JPEG through libjpeg-turbo's libjpeg API, configured as Pillow's JpegDecode.c configures it
// (the default ISLOW inverse DCT and fancy upsampling), so the pixels match Pillow's.
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>

// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include "image/decoders.h"

namespace orchid::image::internal {
namespace {

// libjpeg reports fatal errors through error_exit, which must not return: it longjmps back to
// the setjmp in Run(). Nothing with a destructor lives between the setjmp and the libjpeg calls.
struct JpegContext {
  jpeg_error_mgr err{};
  jpeg_progress_mgr progress{};
  std::jmp_buf jump{};
  char message[JMSG_LENGTH_MAX] = {};
  int max_scans = 0;
  bool all_rows_read = false;  // past the last scanline, a missing EOI is accepted (as Pillow)
  bool scan_limit_hit = false;
};

JpegContext* Context(j_common_ptr c) { return reinterpret_cast<JpegContext*>(c->err); }

[[noreturn]] void ErrorExit(j_common_ptr c) {
  (*c->err->format_message)(c, Context(c)->message);
  std::longjmp(Context(c)->jump, 1);
}

// Warnings are ignored, as Pillow ignores them, except running out of data before the last
// scanline: Pillow then refuses the file ("image file is truncated").
void EmitMessage(j_common_ptr c, int level) {
  if (level >= 0) return;
  JpegContext* ctx = Context(c);
  if (c->err->msg_code == JWRN_JPEG_EOF && !ctx->all_rows_read) {
    std::snprintf(ctx->message, sizeof ctx->message, "truncated JPEG data");
    std::longjmp(ctx->jump, 1);
  }
  c->err->num_warnings++;
}

// A progressive JPEG may hold thousands of tiny scans, each a pass over the whole coefficient
// buffer (libjpeg-turbo's documented denial of service); stop past max_scans.
void Progress(j_common_ptr c) {
  if (!c->is_decompressor) return;
  auto* d = reinterpret_cast<j_decompress_ptr>(c);
  JpegContext* ctx = Context(c);
  if (d->input_scan_number > ctx->max_scans) {
    std::snprintf(ctx->message, sizeof ctx->message, "progressive JPEG has more than %d scans",
                  ctx->max_scans);
    ctx->scan_limit_hit = true;
    std::longjmp(ctx->jump, 1);
  }
}

struct JpegRun {
  jpeg_decompress_struct cinfo{};
  JpegContext ctx;
  bool created = false;
  ~JpegRun() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
};

bool IsPrefix(const jpeg_saved_marker_ptr m, const char* sig, size_t n) {
  return m->data_length >= n && std::memcmp(m->data, sig, n) == 0;
}

// The libjpeg calls, in a function of their own: every object it changes after setjmp lives in
// the caller's frame, so nothing is indeterminate after a longjmp back here.
Status ReadHeaderInto(JpegRun& run, std::span<const uint8_t> bytes, ImageHeader* header) {
  run.cinfo.err = jpeg_std_error(&run.ctx.err);
  run.ctx.err.error_exit = ErrorExit;
  run.ctx.err.emit_message = EmitMessage;
  if (setjmp(run.ctx.jump) != 0) {
    return Status::InvalidArgument(std::string("corrupt JPEG header: ") + run.ctx.message);
  }
  jpeg_create_decompress(&run.cinfo);
  run.created = true;
  jpeg_mem_src(&run.cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&run.cinfo, TRUE);
  *header = {ImageFormat::kJpeg, int(run.cinfo.image_width), int(run.cinfo.image_height)};
  return Status::Ok();
}

Status DecodeInto(JpegRun& run, std::span<const uint8_t> bytes, const DecodeLimits& limits,
                  std::vector<uint8_t>& cmyk, DecodedFrame& out) {
  run.cinfo.err = jpeg_std_error(&run.ctx.err);
  run.ctx.err.error_exit = ErrorExit;
  run.ctx.err.emit_message = EmitMessage;
  run.ctx.max_scans = limits.max_jpeg_scans;
  run.ctx.progress.progress_monitor = Progress;
  if (setjmp(run.ctx.jump) != 0) {
    if (run.ctx.scan_limit_hit) return Status::OutOfRange(run.ctx.message);
    return Status::InvalidArgument(std::string("corrupt JPEG: ") + run.ctx.message);
  }
  jpeg_create_decompress(&run.cinfo);
  run.created = true;
  run.cinfo.progress = &run.ctx.progress;
  jpeg_mem_src(&run.cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_save_markers(&run.cinfo, JPEG_APP0 + 1, 0xFFFF);
  jpeg_read_header(&run.cinfo, TRUE);
  ORCHID_RETURN_IF_ERROR(
      CheckDimensions("JPEG", run.cinfo.image_width, run.cinfo.image_height, limits));
  // Pillow's mode from the component count: L, RGB (libjpeg's guess of YCbCr vs RGB), CMYK.
  const int components = run.cinfo.num_components;
  if (components == 1) {
    run.cinfo.out_color_space = JCS_GRAYSCALE;
  } else if (components == 3) {
    run.cinfo.out_color_space = JCS_RGB;
  } else if (components == 4) {
    run.cinfo.out_color_space = JCS_CMYK;
  } else {
    return Status::InvalidArgument("JPEG with " + std::to_string(components) +
                                   " components (1, 3 or 4 are read)");
  }
  for (jpeg_saved_marker_ptr m = run.cinfo.marker_list; m != nullptr; m = m->next) {
    if (m->marker != JPEG_APP0 + 1) continue;
    if (IsPrefix(m, "Exif\0\0", 6)) {
      // Pillow keeps the first block whole and appends later ones without their prefix.
      const size_t skip = out.exif.empty() ? 0 : 6;
      out.exif.insert(out.exif.end(), m->data + skip, m->data + m->data_length);
    } else if (IsPrefix(m, "http://ns.adobe.com/xap/1.0/\0", 29)) {
      out.xmp.assign(reinterpret_cast<const char*>(m->data) + 29, m->data_length - 29);
    }
  }

  jpeg_start_decompress(&run.cinfo);
  const int w = int(run.cinfo.output_width);
  const int n = run.cinfo.output_components;
  out.rgb = RgbImage(w, int(run.cinfo.output_height));
  // Grey and CMYK rows are decoded in place at the row's start and widened to RGB from the end
  // backwards, except CMYK (4 bytes a pixel), which needs a row of its own.
  if (n == 4) cmyk.resize(size_t(w) * 4);
  while (run.cinfo.output_scanline < run.cinfo.output_height) {
    const int y = int(run.cinfo.output_scanline);
    uint8_t* row = out.rgb.row(y);
    JSAMPROW target = n == 4 ? cmyk.data() : row;
    if (jpeg_read_scanlines(&run.cinfo, &target, 1) != 1) {
      return Status::InvalidArgument("corrupt JPEG: no scanline " + std::to_string(y));
    }
    if (n == 1) {
      for (int x = w - 1; x >= 0; --x) row[3 * x] = row[3 * x + 1] = row[3 * x + 2] = row[x];
    } else if (n == 4) {
      // Pillow reads CMYK JPEGs as Adobe-inverted ("CMYK;I") and converts with cmyk2rgb.
      for (int x = 0; x < w; ++x) {
        const int k = 255 - cmyk[4 * x + 3];
        const int nk = 255 - k;
        for (int c = 0; c < 3; ++c) {
          const int v = 255 - cmyk[4 * x + c];
          const int t = v * nk + 128;
          const int muldiv = ((t >> 8) + t) >> 8;
          const int r = nk - muldiv;
          row[3 * x + c] = uint8_t(r < 0 ? 0 : r > 255 ? 255 : r);
        }
      }
    }
  }
  run.ctx.all_rows_read = true;
  jpeg_finish_decompress(&run.cinfo);
  return Status::Ok();
}

}  // namespace

Result<ImageHeader> ReadJpegHeader(std::span<const uint8_t> bytes) {
  JpegRun run;
  ImageHeader header;
  ORCHID_RETURN_IF_ERROR(ReadHeaderInto(run, bytes, &header));
  return header;
}

Result<DecodedFrame> DecodeJpeg(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  JpegRun run;
  DecodedFrame out;
  std::vector<uint8_t> cmyk;
  ORCHID_RETURN_IF_ERROR(DecodeInto(run, bytes, limits, cmyk, out));
  return out;
}

}  // namespace orchid::image::internal
