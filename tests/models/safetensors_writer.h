// Test helper: writes .safetensors files (valid or deliberately broken) and tiny model dirs.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace orchid::testing_util {

struct RawTensor {
  std::string name;
  std::string dtype;  // "F32", "F16", ...
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

inline std::vector<uint8_t> F32Bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// The JSON header for `tensors` laid out back to back, in order, with optional metadata.
inline std::string HeaderFor(const std::vector<RawTensor>& tensors, bool metadata = true) {
  std::string h = "{";
  if (metadata) h += "\"__metadata__\":{\"format\":\"pt\"}";
  uint64_t off = 0;
  for (const auto& t : tensors) {
    if (h.size() > 1) h += ",";
    // Appends only: GCC 12 at -O3 warns falsely on `"literal" + std::string` chains.
    h.append("\"").append(t.name).append("\":{\"dtype\":\"").append(t.dtype);
    h.append("\",\"shape\":[");
    for (size_t i = 0; i < t.shape.size(); ++i) {
      if (i) h.append(",");
      h.append(std::to_string(t.shape[i]));
    }
    h.append("],\"data_offsets\":[").append(std::to_string(off)).append(",");
    h.append(std::to_string(off + t.bytes.size())).append("]}");
    off += t.bytes.size();
  }
  return h + "}";
}

// 8-byte little-endian length + header + data.
inline std::vector<uint8_t> FileBytes(const std::string& header, const std::vector<uint8_t>& data,
                                      uint64_t declared_len = UINT64_MAX) {
  const uint64_t len = declared_len == UINT64_MAX ? header.size() : declared_len;
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(char(uint8_t(len >> (8 * i))));
  s.append(header);
  s.append(reinterpret_cast<const char*>(data.data()), data.size());
  return std::vector<uint8_t>(s.begin(), s.end());
}

inline std::vector<uint8_t> FileBytes(const std::vector<RawTensor>& tensors) {
  std::vector<uint8_t> data;
  for (const auto& t : tensors) data.insert(data.end(), t.bytes.begin(), t.bytes.end());
  return FileBytes(HeaderFor(tensors), data);
}

inline void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

inline void WriteText(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  f << text;
  ASSERT_TRUE(f.good()) << path;
}

// A fresh empty directory under the test temp dir.
inline std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "orchid_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace orchid::testing_util
