#include "image/resample.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace orchid::image {
namespace {

// The filters in Pillow's operation order (compiled with -ffp-contract=off: no fused
// multiply-adds, which would change the last bits of the weights).
double BoxFilter(double x) { return x > -0.5 && x <= 0.5 ? 1.0 : 0.0; }
double BilinearFilter(double x) {
  if (x < 0.0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}
double HammingFilter(double x) {
  if (x < 0.0) x = -x;
  if (x == 0.0) return 1.0;
  if (x >= 1.0) return 0.0;
  x = x * M_PI;
  // Pillow writes the constants as floats (0.54f, 0.46f): their float values, widened.
  return std::sin(x) / x * (double(0.54f) + double(0.46f) * std::cos(x));
}
double BicubicFilter(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}
double Sinc(double x) {
  if (x == 0.0) return 1.0;
  x = x * M_PI;
  return std::sin(x) / x;
}
double LanczosFilter(double x) {
  if (-3.0 <= x && x < 3.0) return Sinc(x) * Sinc(x / 3);
  return 0.0;
}

struct Filter {
  double (*fn)(double);
  double support;
};

Filter FilterFor(Resample r) {
  switch (r) {
    case Resample::kBox:
      return {BoxFilter, 0.5};
    case Resample::kBilinear:
      return {BilinearFilter, 1.0};
    case Resample::kHamming:
      return {HammingFilter, 1.0};
    case Resample::kBicubic:
      return {BicubicFilter, 2.0};
    case Resample::kLanczos:
      return {LanczosFilter, 3.0};
    case Resample::kNearest:
      break;
  }
  return {BilinearFilter, 1.0};
}

constexpr int kPrecisionBits = 32 - 8 - 2;

// For each output position: the first input index, the count, and ksize fixed-point weights.
struct Coefficients {
  int ksize = 0;
  std::vector<int> first, count;
  std::vector<int32_t> weights;  // out_size x ksize
};

Coefficients Precompute(int in_size, int out_size, const Filter& filter) {
  // Pillow's box is floats (0, in_size); in1 - in0 is computed in float.
  const float in0 = 0.0f, in1 = float(in_size);
  const double scale = double(in1 - in0) / out_size;
  const double filterscale = scale < 1.0 ? 1.0 : scale;
  const double support = filter.support * filterscale;
  Coefficients c;
  c.ksize = int(std::ceil(support)) * 2 + 1;
  c.first.resize(size_t(out_size));
  c.count.resize(size_t(out_size));
  c.weights.assign(size_t(out_size) * size_t(c.ksize), 0);
  std::vector<double> k(size_t(c.ksize));
  const double inv_filterscale = 1.0 / filterscale;
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (xx + 0.5) * scale;
    double ww = 0.0;
    int xmin = int(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = int(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    for (int x = 0; x < xmax; ++x) {
      const double w = filter.fn((x + xmin - center + 0.5) * inv_filterscale);
      k[size_t(x)] = w;
      ww += w;
    }
    int32_t* out = &c.weights[size_t(xx) * size_t(c.ksize)];
    for (int x = 0; x < xmax; ++x) {
      const double v = ww != 0.0 ? k[size_t(x)] / ww : k[size_t(x)];
      // Rounded half away from zero onto 22 fractional bits, truncating as C's cast does.
      out[x] = v < 0 ? int32_t(-0.5 + v * (1 << kPrecisionBits))
                     : int32_t(0.5 + v * (1 << kPrecisionBits));
    }
    c.first[size_t(xx)] = xmin;
    c.count[size_t(xx)] = xmax;
  }
  return c;
}

inline uint8_t Clip8(int32_t v) {
  const int32_t s = v >> kPrecisionBits;  // arithmetic shift: floor
  return uint8_t(s < 0 ? 0 : s > 255 ? 255 : s);
}

// Horizontal pass over input rows [row0, row0 + out.height).
void Horizontal(const RgbImage& in, int row0, const Coefficients& c, RgbImage& out) {
  for (int y = 0; y < out.height; ++y) {
    const uint8_t* src = in.row(row0 + y);
    uint8_t* dst = out.row(y);
    for (int xx = 0; xx < out.width; ++xx) {
      const int xmin = c.first[size_t(xx)], n = c.count[size_t(xx)];
      const int32_t* k = &c.weights[size_t(xx) * size_t(c.ksize)];
      int32_t s0 = 1 << (kPrecisionBits - 1), s1 = s0, s2 = s0;
      const uint8_t* p = src + size_t(xmin) * 3;
      for (int x = 0; x < n; ++x) {
        s0 += p[3 * x] * k[x];
        s1 += p[3 * x + 1] * k[x];
        s2 += p[3 * x + 2] * k[x];
      }
      dst[3 * xx] = Clip8(s0);
      dst[3 * xx + 1] = Clip8(s1);
      dst[3 * xx + 2] = Clip8(s2);
    }
  }
}

// Vertical pass; c.first is relative to `in`'s first row.
void Vertical(const RgbImage& in, const Coefficients& c, int shift, RgbImage& out) {
  const size_t row_len = size_t(out.width) * 3;
  std::vector<int32_t> acc(row_len);
  for (int yy = 0; yy < out.height; ++yy) {
    const int ymin = c.first[size_t(yy)] - shift, n = c.count[size_t(yy)];
    const int32_t* k = &c.weights[size_t(yy) * size_t(c.ksize)];
    std::fill(acc.begin(), acc.end(), int32_t(1) << (kPrecisionBits - 1));
    for (int y = 0; y < n; ++y) {
      const uint8_t* src = in.row(ymin + y);
      const int32_t w = k[y];
      for (size_t i = 0; i < row_len; ++i) acc[i] += src[i] * w;
    }
    uint8_t* dst = out.row(yy);
    for (size_t i = 0; i < row_len; ++i) dst[i] = Clip8(acc[i]);
  }
}

// Pillow's NEAREST: an affine scale with accumulated double source positions.
RgbImage Nearest(const RgbImage& in, int width, int height) {
  RgbImage out(width, height);
  const double ax = double(float(in.width) - 0.0f) / width;
  const double ay = double(float(in.height) - 0.0f) / height;
  auto coord = [](double v) { return v < 0.0 ? -1 : int(v); };
  std::vector<int> xin(size_t(width), -1);
  double xo = 0.0 + ax * 0.5;
  for (int x = 0; x < width; ++x) {
    const int xi = coord(xo);
    if (xi >= 0 && xi < in.width) xin[size_t(x)] = xi;
    xo += ax;
  }
  double yo = 0.0 + ay * 0.5;
  for (int y = 0; y < height; ++y) {
    const int yi = coord(yo);
    uint8_t* dst = out.row(y);
    if (yi >= 0 && yi < in.height) {
      const uint8_t* src = in.row(yi);
      for (int x = 0; x < width; ++x) {
        if (xin[size_t(x)] >= 0) std::memcpy(dst + 3 * x, src + 3 * xin[size_t(x)], 3);
      }
    }
    yo += ay;
  }
  return out;
}

}  // namespace

Result<Resample> ResampleFromPil(int n) {
  switch (n) {
    case 0:
      return Resample::kNearest;
    case 1:
      return Resample::kLanczos;
    case 2:
      return Resample::kBilinear;
    case 3:
      return Resample::kBicubic;
    case 4:
      return Resample::kBox;
    case 5:
      return Resample::kHamming;
    default:
      break;
  }
  return Status::InvalidArgument("unsupported resample filter " + std::to_string(n) +
                                 " (PIL numbers 0-5: nearest, lanczos, bilinear, bicubic, box, "
                                 "hamming)");
}

const char* ResampleName(Resample filter) {
  switch (filter) {
    case Resample::kNearest:
      return "nearest";
    case Resample::kLanczos:
      return "lanczos";
    case Resample::kBilinear:
      return "bilinear";
    case Resample::kBicubic:
      return "bicubic";
    case Resample::kBox:
      return "box";
    case Resample::kHamming:
      return "hamming";
  }
  return "?";
}

Result<RgbImage> Resize(const RgbImage& in, int width, int height, Resample filter) {
  if (width < 1 || height < 1 || in.width < 1 || in.height < 1) {
    return Status::InvalidArgument("cannot resize " + std::to_string(in.width) + "x" +
                                   std::to_string(in.height) + " to " + std::to_string(width) +
                                   "x" + std::to_string(height));
  }
  if (width == in.width && height == in.height) return in;
  if (filter == Resample::kNearest) return Nearest(in, width, height);

  const Filter f = FilterFor(filter);
  const bool need_h = width != in.width;
  const bool need_v = height != in.height;
  // Pillow 13 runs the vertical pass first when the height shrinks by more than twice as many
  // pixels as the width (python-pillow/Pillow#9549; the rule measured against Pillow 13.0.0:
  // strictly more, box = the whole picture). The 8-bit intermediate makes the order visible.
  const bool vertical_first = height < in.height && (in.height - height) > 2 * (in.width - width);
  const Coefficients vert = Precompute(in.height, height, f);
  if (vertical_first) {
    RgbImage temp(in.width, height);
    if (need_v)
      Vertical(in, vert, 0, temp);
    else
      temp = in;
    if (!need_h) return temp;
    const Coefficients horiz = Precompute(in.width, width, f);
    RgbImage out(width, height);
    Horizontal(temp, 0, horiz, out);
    return out;
  }
  // Only the input rows the vertical pass reads go through the horizontal pass.
  const int row_first = vert.first.front();
  const int row_last = vert.first.back() + vert.count.back();
  RgbImage temp;
  const RgbImage* src = &in;
  int shift = 0;
  if (need_h) {
    const Coefficients horiz = Precompute(in.width, width, f);
    temp = RgbImage(width, row_last - row_first);
    Horizontal(in, row_first, horiz, temp);
    src = &temp;
    shift = row_first;
  }
  if (!need_v) return temp;
  RgbImage out(width, height);
  Vertical(*src, vert, shift, out);
  return out;
}

}  // namespace orchid::image
