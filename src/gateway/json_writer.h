// JsonWriter: appends compact JSON to a string. Parsing is simdjson's job; this only writes.
//
// The caller is responsible for structure (keys inside objects, balanced Begin/End); the writer
// inserts commas. Floats are written in the shortest form that reads back to the same float
// (std::to_chars); NaN and infinities, which JSON cannot hold, are written as null.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace orchid {

class JsonWriter {
 public:
  explicit JsonWriter(std::string* out) : out_(out) {}

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Float(float value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  // Writes `json` verbatim as one value (it must already be valid JSON).
  JsonWriter& Raw(std::string_view json);
  // A JSON array of floats, written in one go.
  JsonWriter& FloatArray(const float* values, size_t n);

 private:
  void BeforeValue();
  std::string* out_;
  // Per open container: whether it already holds an element (so the next one needs a comma).
  std::vector<bool> has_element_;
  bool after_key_ = false;
};

// Appends `s` as a quoted JSON string, escaping what JSON requires. Bytes are copied as they are
// (the caller passes UTF-8).
void AppendJsonString(std::string* out, std::string_view s);
// Appends the shortest decimal that reads back as `v` ("null" for NaN / infinity).
void AppendJsonFloat(std::string* out, float v);

}  // namespace orchid
