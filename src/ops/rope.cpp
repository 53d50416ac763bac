#include "ops/rope.h"

#include <algorithm>
#include <cmath>

namespace orchid::ops {
namespace {

constexpr double kPi = 3.14159265358979323846;

// torch's scalar ** fp32 tensor: the exponent rounded to fp32, the power within an ulp.
float PowF(float base, float e) { return float(std::pow(double(base), double(e))); }

// transformers' default: inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim)).
void DefaultInverse(float base, int dim, std::vector<float>* inv) {
  inv->resize(size_t(dim / 2));
  for (int k = 0; k < dim / 2; ++k) {
    const float e = float(2 * k) / float(dim);
    (*inv)[size_t(k)] = 1.0f / PowF(base, e);
  }
}

// yarn_get_mscale(scale, mscale).
double YarnMscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

void Llama3(const RopeScaling& s, std::vector<float>* inv) {
  // _compute_llama3_parameters: the wavelength 2 pi / inv_freq (torch: reciprocal, then times
  // the scalar) against the trained context divided by the low and high frequency factors.
  const double context = s.original_max_positions;
  const float low_wavelen = float(context / s.low_freq_factor);
  const float high_wavelen = float(context / s.high_freq_factor);
  const float factor = float(s.factor);
  for (float& f : *inv) {
    const float wavelen = (1.0f / f) * float(2 * kPi);
    const float scaled = wavelen > low_wavelen ? f / factor : f;
    const float smooth = ((1.0f / wavelen) * float(context) - float(s.low_freq_factor)) /
                         float(s.high_freq_factor - s.low_freq_factor);
    const float smoothed = (1.0f - smooth) * scaled / factor + smooth * scaled;
    const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
    f = medium ? smoothed : scaled;
  }
}

void Yarn(double theta, int dim, const RopeScaling& s, std::vector<float>* inv, float* scaling) {
  const double factor = s.factor;
  double af = s.attention_factor;
  if (af == 0) {
    af = s.mscale != 0 && s.mscale_all_dim != 0
             ? YarnMscale(factor, s.mscale) / YarnMscale(factor, s.mscale_all_dim)
             : YarnMscale(factor, 1.0);
  }
  *scaling = float(af);
  const double beta_fast = s.beta_fast != 0 ? s.beta_fast : 32.0;
  const double beta_slow = s.beta_slow != 0 ? s.beta_slow : 1.0;
  // find_correction_dim: the dimension whose wavelength turns `rotations` times in the context.
  auto correction_dim = [&](double rotations) {
    return (dim * std::log(double(s.original_max_positions) / (rotations * 2 * kPi))) /
           (2 * std::log(theta));
  };
  double low = correction_dim(beta_fast), high = correction_dim(beta_slow);
  if (s.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, double(dim - 1));
  if (low == high) high += 0.001;  // transformers: prevent a division by zero
  const float base = float(theta);
  inv->resize(size_t(dim / 2));
  for (int k = 0; k < dim / 2; ++k) {
    const float pos_freq = PowF(base, float(2 * k) / float(dim));
    const float extrapolation = 1.0f / pos_freq;
    const float interpolation = 1.0f / (float(factor) * pos_freq);
    const float ramp = std::clamp((float(k) - float(low)) / float(high - low), 0.0f, 1.0f);
    const float keep = 1.0f - ramp;  // 1: the original frequency, 0: interpolated
    (*inv)[size_t(k)] = interpolation * (1.0f - keep) + extrapolation * keep;
  }
}

}  // namespace

void RopeInverseFrequencies(double theta, int dim, const RopeScaling& s, int seq_len,
                            std::vector<float>* inv_freq, float* attention_scaling) {
  *attention_scaling = 1.0f;
  switch (s.type) {
    case RopeType::kDefault:
      DefaultInverse(float(theta), dim, inv_freq);
      return;
    case RopeType::kLinear:
      DefaultInverse(float(theta), dim, inv_freq);
      for (float& f : *inv_freq) f /= float(s.factor);
      return;
    case RopeType::kDynamic: {
      if (seq_len <= s.max_positions) {  // no growth: the base as configured
        DefaultInverse(float(theta), dim, inv_freq);
        return;
      }
      // _compute_dynamic_ntk_parameters at forward time (seq_len a 0-dim tensor: fp32 steps):
      // base * ((factor * seq_len / max_positions) - (factor - 1)) ** (dim / (dim - 2)).
      float t = float(s.factor) * float(seq_len);
      t = t / float(s.max_positions);
      t = t - float(s.factor - 1.0);
      t = float(std::pow(double(t), double(dim) / double(dim - 2)));
      DefaultInverse(float(theta) * t, dim, inv_freq);
      return;
    }
    case RopeType::kLlama3:
      DefaultInverse(float(theta), dim, inv_freq);
      Llama3(s, inv_freq);
      return;
    case RopeType::kYarn:
      Yarn(theta, dim, s, inv_freq, attention_scaling);
      return;
  }
}

}  // namespace orchid::ops
