#include "description/json_file.h"

#include <cmath>
#include <filesystem>

namespace orchid {

Result<JsonFile> JsonFile::Read(const std::string& path, bool require_object) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::NotFound(path + ": file not found");
  }
  JsonFile f;
  f.path_ = path;
  f.parser_ = std::make_unique<simdjson::dom::parser>();
  simdjson::padded_string text;
  if (auto err = simdjson::padded_string::load(path).get(text)) {
    return Status::IoError(path + ": cannot read: " + simdjson::error_message(err));
  }
  if (auto err = f.parser_->parse(text).get(f.root_)) {
    return Status::Corrupt(path + ": not valid JSON: " + simdjson::error_message(err));
  }
  if (require_object && !f.root_.is_object()) {
    return Status::Corrupt(path + ": not a JSON object");
  }
  // The DOM keeps pointers into the parser, not into `text`, so `text` may go.
  return f;
}

bool JsonFile::Has(std::string_view field) const {
  simdjson::dom::object obj;
  if (root_.get_object().get(obj)) return false;
  simdjson::dom::element v;
  return !obj.at_key(field).get(v);
}

bool JsonFile::Absent(std::string_view field) const {
  simdjson::dom::element v;
  if (root_[field].get(v)) return true;
  return v.is_null();
}

Status JsonFile::FieldError(std::string_view field, const std::string& message) const {
  return Status::Corrupt(path_ + ": field \"" + std::string(field) + "\" " + message);
}

Status JsonFile::Size(std::string_view field, int64_t max, int* out) const {
  ORCHID_ASSIGN_OR_RETURN(int64_t v, Int(field));
  if (v <= 0 || v > max) {
    return FieldError(field, "is " + std::to_string(v) + ", expected 1.." + std::to_string(max));
  }
  *out = int(v);
  return Status::Ok();
}

Result<int64_t> JsonFile::Int(std::string_view field) const {
  if (Absent(field)) return FieldError(field, "is missing");
  simdjson::dom::element v = root_[field].value_unsafe();
  int64_t i;
  if (!v.get_int64().get(i)) return i;
  // Some writers emit integers as 384.0.
  double d;
  if (!v.get_double().get(d) && std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) {
    return int64_t(d);
  }
  return FieldError(field, "must be an integer");
}

Result<double> JsonFile::Number(std::string_view field) const {
  if (Absent(field)) return FieldError(field, "is missing");
  double d;
  if (root_[field].get_double().get(d)) {
    int64_t i;
    if (root_[field].get_int64().get(i)) return FieldError(field, "must be a number");
    d = double(i);
  }
  return d;
}

Result<std::string> JsonFile::String(std::string_view field) const {
  if (Absent(field)) return FieldError(field, "is missing");
  std::string_view s;
  if (root_[field].get_string().get(s)) return FieldError(field, "must be a string");
  return std::string(s);
}

Result<bool> JsonFile::Bool(std::string_view field) const {
  if (Absent(field)) return FieldError(field, "is missing");
  bool b;
  if (root_[field].get_bool().get(b)) return FieldError(field, "must be true or false");
  return b;
}

Result<int64_t> JsonFile::Int(std::string_view field, int64_t fallback) const {
  if (Absent(field)) return fallback;
  return Int(field);
}

Result<double> JsonFile::Number(std::string_view field, double fallback) const {
  if (Absent(field)) return fallback;
  return Number(field);
}

Result<std::string> JsonFile::String(std::string_view field, const std::string& fallback) const {
  if (Absent(field)) return fallback;
  return String(field);
}

Result<bool> JsonFile::Bool(std::string_view field, bool fallback) const {
  if (Absent(field)) return fallback;
  return Bool(field);
}

}  // namespace orchid
