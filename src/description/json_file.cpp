#include "description/json_file.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

namespace orchid {
namespace {

// transformers writes an unset tokenizer model_max_length as the integer
// 1000000000000000019884624838656 (int(1e30)), which simdjson cannot hold as an integer: every
// integer literal of more than 18 digits outside strings gets ".0" and so reads as a double.
// Returns false when there is none (the parse error stands).
bool WidenBigIntegers(const simdjson::padded_string& in, std::string* out) {
  const std::string_view s(in.data(), in.size());
  out->clear();
  out->reserve(s.size() + 16);
  bool in_string = false, changed = false;
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (in_string) {
      out->push_back(c);
      if (c == '\\' && i + 1 < s.size()) {
        out->push_back(s[i + 1]);
        i += 2;
        continue;
      }
      if (c == '"') in_string = false;
      ++i;
      continue;
    }
    if (c == '"') {
      in_string = true;
      out->push_back(c);
      ++i;
      continue;
    }
    if (c >= '0' && c <= '9') {
      size_t j = i;
      while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
      out->append(s.substr(i, j - i));
      const bool fraction = j < s.size() && (s[j] == '.' || s[j] == 'e' || s[j] == 'E');
      if (j - i > 18 && !fraction) {
        out->append(".0");
        changed = true;
      }
      i = j;
      continue;
    }
    out->push_back(c);
    ++i;
  }
  return changed;
}

}  // namespace

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
    std::string widened;
    if (err != simdjson::NUMBER_ERROR || !WidenBigIntegers(text, &widened) ||
        f.parser_->parse(widened).get(f.root_)) {
      return Status::Corrupt(path + ": not valid JSON: " + simdjson::error_message(err));
    }
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

Status ReadClassifierLabels(const JsonFile& f, int* num_labels, std::vector<std::string>* names,
                            bool* multi_label) {
  *num_labels = 2;  // transformers' PretrainedConfig default
  names->clear();
  simdjson::dom::object labels;
  if (!f.root()["id2label"].get_object().get(labels)) {
    *num_labels = int(labels.size());
    if (*num_labels <= 0 || *num_labels > 1 << 16) {
      return f.FieldError("id2label", "must name between 1 and 65536 labels");
    }
    // {"0": "negative", "1": "positive"}: every id from 0 to n-1 once, each with a string name.
    names->assign(size_t(*num_labels), std::string());
    std::vector<bool> seen(size_t(*num_labels), false);
    for (simdjson::dom::key_value_pair kv : labels) {
      const std::string_view key = kv.key;
      size_t id = 0;
      bool digits = !key.empty() && key.size() <= 6;
      for (char ch : key) {
        digits = digits && ch >= '0' && ch <= '9';
        if (digits) id = id * 10 + size_t(ch - '0');
      }
      if (!digits || id >= size_t(*num_labels) || seen[id] || (key.size() > 1 && key[0] == '0')) {
        return f.FieldError("id2label", fmt::format("has the key \"{}\"; its keys must be the ids "
                                                    "0 to {}, each once",
                                                    key, *num_labels - 1));
      }
      std::string_view name;
      if (kv.value.get_string().get(name)) {
        return f.FieldError("id2label",
                            fmt::format("\"{}\" must name its label with a string", key));
      }
      seen[id] = true;
      (*names)[id] = std::string(name);
    }
  }
  ORCHID_ASSIGN_OR_RETURN(std::string problem, f.String("problem_type", ""));
  *multi_label = problem == "multi_label_classification";
  return Status::Ok();
}

Result<std::vector<int>> ReadLayerWindows(const JsonFile& f, int layers, int window,
                                          const std::function<bool(int)>& local) {
  std::vector<int> out(size_t(layers), 0);
  simdjson::dom::array types;
  if (f.root()["layer_types"].get_array().get(types)) {
    for (int i = 0; i < layers; ++i) out[size_t(i)] = local(i) ? window : 0;
    return out;
  }
  if (types.size() != size_t(layers)) {
    return f.FieldError("layer_types", "must name one type per layer");
  }
  size_t i = 0;
  for (simdjson::dom::element t : types) {
    std::string_view name;
    if (t.get_string().get(name) || (name != "sliding_attention" && name != "full_attention")) {
      return f.FieldError("layer_types", "must hold \"sliding_attention\" or \"full_attention\"");
    }
    out[i++] = name == "sliding_attention" ? window : 0;
  }
  return out;
}

std::optional<int32_t> TokenizerJsonId(simdjson::dom::element root, std::string_view token) {
  simdjson::dom::array added;
  if (!root["added_tokens"].get_array().get(added)) {
    for (simdjson::dom::element t : added) {
      std::string_view content;
      int64_t id = 0;
      if (!t["content"].get_string().get(content) && content == token &&
          !t["id"].get_int64().get(id)) {
        return int32_t(id);
      }
    }
  }
  int64_t id = 0;
  if (!root["model"]["vocab"][token].get_int64().get(id)) return int32_t(id);
  return std::nullopt;
}

}  // namespace orchid
