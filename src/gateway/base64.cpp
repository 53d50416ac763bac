#include "gateway/base64.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

namespace orchid {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int DecodeChar(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

void AppendBase64(std::string* out, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  const size_t start = out->size();
  out->resize(start + (size + 2) / 3 * 4);
  char* o = out->data() + start;
  size_t i = 0;
  for (; i + 3 <= size; i += 3) {
    const uint32_t v = uint32_t(p[i]) << 16 | uint32_t(p[i + 1]) << 8 | p[i + 2];
    *o++ = kAlphabet[v >> 18];
    *o++ = kAlphabet[(v >> 12) & 63];
    *o++ = kAlphabet[(v >> 6) & 63];
    *o++ = kAlphabet[v & 63];
  }
  if (size - i == 1) {
    const uint32_t v = uint32_t(p[i]) << 16;
    *o++ = kAlphabet[v >> 18];
    *o++ = kAlphabet[(v >> 12) & 63];
    *o++ = '=';
    *o++ = '=';
  } else if (size - i == 2) {
    const uint32_t v = uint32_t(p[i]) << 16 | uint32_t(p[i + 1]) << 8;
    *o++ = kAlphabet[v >> 18];
    *o++ = kAlphabet[(v >> 12) & 63];
    *o++ = kAlphabet[(v >> 6) & 63];
    *o++ = '=';
  }
}

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  AppendBase64(&out, bytes.data(), bytes.size());
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = text[i + k];
      if (c == '=' && last && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return std::nullopt;  // data after padding
      v[k] = DecodeChar(c);
      if (v[k] < 0) return std::nullopt;
    }
    const uint32_t w = uint32_t(v[0]) << 18 | uint32_t(v[1]) << 12 | uint32_t(v[2]) << 6 | v[3];
    out.push_back(char(w >> 16));
    if (pad < 2) out.push_back(char((w >> 8) & 0xFF));
    if (pad < 1) out.push_back(char(w & 0xFF));
  }
  return out;
}

void AppendBase64Floats(std::string* out, const float* values, size_t n) {
  if constexpr (std::endian::native == std::endian::little) {
    AppendBase64(out, values, n * sizeof(float));
  } else {
    std::vector<uint32_t> le(n);
    for (size_t i = 0; i < n; ++i) {
      uint32_t u;
      std::memcpy(&u, &values[i], sizeof(u));
      le[i] = __builtin_bswap32(u);
    }
    AppendBase64(out, le.data(), n * sizeof(uint32_t));
  }
}

}  // namespace orchid
