// The kept int8 check's file format (int8_cache.h), apart from everything else of int8_cache.cpp
// so that the fuzzer (tests/fuzz/int8_check_fuzz.cpp) builds it alone.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "runtime/int8_cache.h"

namespace orchid {
namespace {

constexpr char kMagic[] = "orchid-int8-check 1\n";
constexpr uint32_t kMaxKeyBytes = 1 << 22;  // a file claiming more is damaged
constexpr uint32_t kMaxLayers = 1 << 16;
constexpr uint32_t kMaxWidth = 1 << 20;

template <typename T>
void Put(std::string* out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out->append(b, sizeof(T));
}

// Reads a T at *at of data; false past the end.
template <typename T>
bool Get(const std::string& data, size_t* at, T* v) {
  if (data.size() - *at < sizeof(T)) return false;
  std::memcpy(v, data.data() + *at, sizeof(T));
  *at += sizeof(T);
  return true;
}

}  // namespace

std::string SerializeInt8Check(const std::string& key, const Int8CheckRecord& r) {
  std::string data(kMagic);
  Put(&data, uint32_t(key.size()));
  data += key;
  Put(&data, int32_t(r.samples));
  Put(&data, r.mean_cosine);
  Put(&data, r.min_cosine);
  Put(&data, uint32_t(r.input_ranges.size()));
  for (const std::vector<float>& l : r.input_ranges) {
    Put(&data, uint32_t(l.size()));
    data.append(reinterpret_cast<const char*>(l.data()), l.size() * sizeof(float));
  }
  return data;
}

std::optional<Int8CheckRecord> ParseInt8Check(const std::string& data, const std::string& key) {
  const size_t magic = sizeof(kMagic) - 1;
  if (data.size() < magic || data.compare(0, magic, kMagic) != 0) return std::nullopt;
  size_t at = magic;
  uint32_t key_len = 0;
  if (!Get(data, &at, &key_len) || key_len > kMaxKeyBytes || data.size() - at < key_len ||
      key_len != key.size() || data.compare(at, key_len, key) != 0) {
    return std::nullopt;
  }
  at += key_len;
  Int8CheckRecord r;
  int32_t samples = 0;
  uint32_t layers = 0;
  if (!Get(data, &at, &samples) || !Get(data, &at, &r.mean_cosine) ||
      !Get(data, &at, &r.min_cosine) || !Get(data, &at, &layers)) {
    return std::nullopt;
  }
  if (samples < 0 || !std::isfinite(r.mean_cosine) || !std::isfinite(r.min_cosine) ||
      layers > kMaxLayers) {
    return std::nullopt;
  }
  r.samples = samples;
  for (uint32_t i = 0; i < layers; ++i) {
    uint32_t width = 0;
    if (!Get(data, &at, &width) || width > kMaxWidth ||
        (data.size() - at) / sizeof(float) < width) {
      return std::nullopt;
    }
    std::vector<float> l(width);
    if (width > 0) std::memcpy(l.data(), data.data() + at, size_t(width) * sizeof(float));
    at += size_t(width) * sizeof(float);
    for (float v : l) {
      if (!std::isfinite(v) || v < 0) return std::nullopt;
    }
    r.input_ranges.push_back(std::move(l));
  }
  if (at != data.size()) return std::nullopt;
  return r;
}

}  // namespace orchid
