// JsonFile: a parsed JSON configuration file with typed field accessors whose errors name the
// file and the field ("config.json: field \"hidden_size\" must be a positive integer").
// Thread safety: read-only after Read(); not shared across threads in practice.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace orchid {

class JsonFile {
 public:
  // kNotFound when the file is absent, kCorrupt when it is not JSON (or, with require_object,
  // not a JSON object).
  static Result<JsonFile> Read(const std::string& path, bool require_object = true);

  const std::string& path() const { return path_; }
  simdjson::dom::element root() const { return root_; }
  bool Has(std::string_view field) const;

  // Required fields: an error naming the file and field when absent or of the wrong type.
  Result<int64_t> Int(std::string_view field) const;
  Result<double> Number(std::string_view field) const;
  Result<std::string> String(std::string_view field) const;
  Result<bool> Bool(std::string_view field) const;
  // Optional fields: the fallback when absent (or JSON null), an error when of the wrong type.
  Result<int64_t> Int(std::string_view field, int64_t fallback) const;
  Result<double> Number(std::string_view field, double fallback) const;
  Result<std::string> String(std::string_view field, const std::string& fallback) const;
  Result<bool> Bool(std::string_view field, bool fallback) const;
  // A required positive integer no larger than `max` (model sizes), stored into *out.
  Status Size(std::string_view field, int64_t max, int* out) const;

  // "PATH: field \"NAME\" MESSAGE", for callers' own checks.
  Status FieldError(std::string_view field, const std::string& message) const;

 private:
  JsonFile() = default;
  bool Absent(std::string_view field) const;

  std::string path_;
  std::unique_ptr<simdjson::dom::parser> parser_;
  simdjson::dom::element root_;
};

// A classifier's labels from config.json: id2label (every id 0..n-1 once, string names; absent:
// transformers' default of 2 unnamed labels) and problem_type multi_label_classification.
Status ReadClassifierLabels(const JsonFile& f, int* num_labels, std::vector<std::string>* names,
                            bool* multi_label);

// The id `tokenizers`' token_to_id gives `token` in a parsed tokenizer.json (`root`): an added
// token's id, else model.vocab[token]; nullopt when neither has it.
std::optional<int32_t> TokenizerJsonId(simdjson::dom::element root, std::string_view token);

// Per layer, `window` for a "sliding_attention" layer and 0 for a "full_attention" one, from
// config.json's layer_types; without it, local(i) says whether layer i is a sliding one.
Result<std::vector<int>> ReadLayerWindows(const JsonFile& f, int layers, int window,
                                          const std::function<bool(int)>& local);

}  // namespace orchid
