// Host-side bf16 conversions (round to nearest even, NaN kept quiet), used to upload weights
// and by the tests. bf16 is the top 16 bits of an IEEE fp32.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <cstring>

namespace orchid::cuda {

inline uint16_t FloatToBf16Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline float Bf16BitsToFloat(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// x rounded to the nearest bf16 value, as fp32.
inline float RoundBf16(float x) { return Bf16BitsToFloat(FloatToBf16Bits(x)); }

}  // namespace orchid::cuda
