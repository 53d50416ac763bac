// Helpers the unit tests share: cosine similarity in double precision and readers of the
// committed JSON references (ids, float rows). Header-only; every test may include it.
#pragma once

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace orchid::testing_util {

// The cosine of two rows of n floats, accumulated in double. Zero rows give 0, not NaN (a NaN
// would slip through std::min / std::max when a test keeps the worst cosine).
inline double Cosine(const float* a, const float* b, size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return ab / std::sqrt(std::max(aa * bb, 1e-300));
}

// The cosine of a row of floats and a reference row of doubles (b.size() values of each).
inline double Cosine(const float* a, const std::vector<double>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    ab += a[i] * b[i];
    aa += double(a[i]) * a[i];
    bb += b[i] * b[i];
  }
  return ab / std::sqrt(std::max(aa * bb, 1e-300));
}

// Parses the JSON file at `path` into *doc (which lives as long as `parser`); false, and a test
// failure naming the file, when it cannot be read or parsed.
inline bool LoadJson(simdjson::dom::parser& parser, const std::string& path,
                     simdjson::dom::element* doc) {
  if (parser.load(path).get(*doc) != simdjson::SUCCESS) {
    ADD_FAILURE() << "cannot read " << path;
    return false;
  }
  return true;
}

// A JSON array of integers (token ids, type ids) as int32.
inline std::vector<int32_t> Int32Array(simdjson::dom::element arr) {
  std::vector<int32_t> out;
  for (auto v : arr.get_array()) out.push_back(int32_t(v.get_int64().value()));
  return out;
}

// A JSON array of numbers (a reference row) as doubles.
inline std::vector<double> DoubleArray(simdjson::dom::element arr) {
  std::vector<double> out;
  for (auto v : arr.get_array()) out.push_back(v.get_double().value());
  return out;
}

}  // namespace orchid::testing_util
