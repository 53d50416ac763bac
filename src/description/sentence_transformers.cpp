#include "description/sentence_transformers.h"

#include <filesystem>

#include "description/json_file.h"
#include "description/model_files.h"

namespace orchid {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Pooling's config.json, in sentence-transformers' current fields ("embedding_dimension",
// "pooling_mode": a mode name or a one-element list, "include_prompt") or its legacy ones
// ("word_embedding_dimension", "pooling_mode_*_tokens": true); no mode at all is mean, as
// sentence-transformers reads it.
Status ReadPoolingConfig(const std::string& path, SentenceTransformersConfig* c) {
  ORCHID_ASSIGN_OR_RETURN(JsonFile f, JsonFile::Read(path));
  const char* dim_field =
      f.Has("embedding_dimension") ? "embedding_dimension" : "word_embedding_dimension";
  ORCHID_ASSIGN_OR_RETURN(int64_t dim, f.Int(dim_field, 0));
  if (dim < 0 || dim > (1 << 20)) return f.FieldError(dim_field, "is out of range");
  c->word_embedding_dimension = int(dim);
  ORCHID_ASSIGN_OR_RETURN(c->include_prompt, f.Bool("include_prompt", true));
  struct Mode {
    const char* field;  // legacy
    const char* name;   // current
    Pooling pooling;
  };
  const Mode modes[] = {
      {"pooling_mode_mean_tokens", "mean", Pooling::kMean},
      {"pooling_mode_cls_token", "cls", Pooling::kCls},
      {"pooling_mode_lasttoken", "lasttoken", Pooling::kLastToken},
      {"pooling_mode_max_tokens", "max", Pooling::kMax},
      {"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens", Pooling::kMeanSqrtLen},
      {"pooling_mode_weightedmean_tokens", "weightedmean", Pooling::kWeightedMean},
  };
  simdjson::dom::element mode;
  if (!f.root()["pooling_mode"].get(mode) && !mode.is_null()) {
    std::string_view name;
    simdjson::dom::array list;
    if (!mode.get_array().get(list)) {
      if (list.size() != 1) {
        return f.FieldError("pooling_mode",
                            "lists several modes; concatenated pooling modes are "
                            "not supported");
      }
      if (list.at(0).get_string().get(name)) {
        return f.FieldError("pooling_mode", "must be a mode name or a list of one");
      }
    } else if (mode.get_string().get(name)) {
      return f.FieldError("pooling_mode", "must be a mode name or a list of one");
    }
    for (const Mode& m : modes) {
      if (name == m.name) {
        c->pooling = m.pooling;
        return Status::Ok();
      }
    }
    return f.FieldError("pooling_mode", "is \"" + std::string(name) +
                                            "\"; supported: mean, cls, lasttoken, max, "
                                            "mean_sqrt_len_tokens, weightedmean");
  }
  int enabled = 0;
  c->pooling = Pooling::kMean;
  for (const Mode& m : modes) {
    ORCHID_ASSIGN_OR_RETURN(bool on, f.Bool(m.field, false));
    if (!on) continue;
    if (++enabled > 1) {
      return f.FieldError(m.field,
                          "is true along with another pooling mode; only one mode at a "
                          "time is supported");
    }
    c->pooling = m.pooling;
  }
  return Status::Ok();
}

Result<DenseModule> ReadDenseConfig(const std::string& dir) {
  ORCHID_ASSIGN_OR_RETURN(JsonFile f, JsonFile::Read(dir + "/config.json"));
  DenseModule d;
  d.dir = dir;
  ORCHID_RETURN_IF_ERROR(f.Size("in_features", 1 << 20, &d.in_features));
  ORCHID_RETURN_IF_ERROR(f.Size("out_features", 1 << 20, &d.out_features));
  ORCHID_ASSIGN_OR_RETURN(d.bias, f.Bool("bias", true));
  ORCHID_ASSIGN_OR_RETURN(std::string act,
                          f.String("activation_function", "torch.nn.modules.activation.Tanh"));
  if (EndsWith(act, ".Tanh")) {
    d.tanh = true;
  } else if (!EndsWith(act, ".Identity")) {
    return f.FieldError("activation_function",
                        "is \"" + act + "\"; only Identity and Tanh are supported");
  }
  ORCHID_ASSIGN_OR_RETURN(bool residual, f.Bool("use_residual", false));
  if (residual) return f.FieldError("use_residual", "is true; not supported");
  if (!HasWeights(dir)) {
    return Status::NotFound(dir + "/" + kWeightsFile +
                            " not found (a Dense module's weights must be safetensors)");
  }
  return d;
}

}  // namespace

Result<SentenceTransformersConfig> ReadSentenceTransformersConfig(const std::string& dir) {
  SentenceTransformersConfig c;
  const std::string modules_path = dir + "/modules.json";
  std::error_code ec;
  if (!std::filesystem::exists(modules_path, ec)) return c;
  c.present = true;
  ORCHID_ASSIGN_OR_RETURN(JsonFile modules, JsonFile::Read(modules_path, /*require_object=*/false));
  simdjson::dom::array arr;
  if (modules.root().get_array().get(arr)) {
    return Status::Corrupt(modules_path + ": expected a JSON array of modules");
  }
  bool have_pooling = false;
  size_t i = 0;
  for (simdjson::dom::element m : arr) {
    const std::string where = modules_path + ": module " + std::to_string(i++);
    std::string_view type, path;
    if (m["type"].get_string().get(type)) return Status::Corrupt(where + ": missing \"type\"");
    if (m["path"].get_string().get(path)) path = "";
    // A sparse encoder's MLMTransformer is the transformer with its masked-LM head.
    if (EndsWith(type, ".Transformer") || EndsWith(type, ".MLMTransformer")) continue;
    if (EndsWith(type, ".SpladePooling")) {
      if (have_pooling) return Status::Corrupt(where + ": a second pooling module");
      have_pooling = true;
      if (path.empty() || path.find("..") != std::string_view::npos || path.front() == '/') {
        return Status::Corrupt(where + ": bad SpladePooling \"path\" \"" + std::string(path) +
                               "\"");
      }
      ORCHID_ASSIGN_OR_RETURN(JsonFile f,
                              JsonFile::Read(dir + "/" + std::string(path) + "/config.json"));
      ORCHID_ASSIGN_OR_RETURN(std::string strategy, f.String("pooling_strategy", "max"));
      if (strategy != "max") {
        return f.FieldError("pooling_strategy",
                            "is \"" + strategy + "\"; only \"max\" is supported");
      }
      ORCHID_ASSIGN_OR_RETURN(std::string act, f.String("activation_function", "relu"));
      if (act != "relu" && act != "log1p_relu") {
        return f.FieldError("activation_function", "must be \"relu\" or \"log1p_relu\"");
      }
      c.splade_log1p = act == "relu" ? 1 : 2;
      c.pooling = Pooling::kMax;
      continue;
    }
    if (EndsWith(type, ".Normalize")) {
      c.normalize = true;
      continue;
    }
    if (EndsWith(type, ".Dense")) {
      if (!have_pooling || c.normalize) {
        return Status::Corrupt(where +
                               ": a Dense module must come after Pooling and before "
                               "Normalize");
      }
      if (path.empty() || path.find("..") != std::string_view::npos || path.front() == '/') {
        return Status::Corrupt(where + ": bad Dense \"path\" \"" + std::string(path) + "\"");
      }
      ORCHID_ASSIGN_OR_RETURN(DenseModule d, ReadDenseConfig(dir + "/" + std::string(path)));
      const int width = c.dense.empty() ? c.word_embedding_dimension : c.dense.back().out_features;
      if (width != 0 && d.in_features != width) {
        return Status::Corrupt(
            d.dir + "/config.json: in_features (" + std::to_string(d.in_features) +
            ") differs from the width before it (" + std::to_string(width) + ")");
      }
      c.dense.push_back(std::move(d));
      continue;
    }
    if (EndsWith(type, ".Pooling")) {
      if (have_pooling) return Status::Corrupt(where + ": a second Pooling module");
      have_pooling = true;
      if (path.empty() || path.find("..") != std::string_view::npos || path.front() == '/') {
        return Status::Corrupt(where + ": bad Pooling \"path\" \"" + std::string(path) + "\"");
      }
      ORCHID_RETURN_IF_ERROR(ReadPoolingConfig(dir + "/" + std::string(path) + "/config.json", &c));
      continue;
    }
    return Status::Corrupt(where + ": module type \"" + std::string(type) + "\" is not supported");
  }

  const std::string sbert_path = dir + "/sentence_bert_config.json";
  if (std::filesystem::exists(sbert_path, ec)) {
    ORCHID_ASSIGN_OR_RETURN(JsonFile f, JsonFile::Read(sbert_path));
    ORCHID_ASSIGN_OR_RETURN(int64_t len, f.Int("max_seq_length", 0));
    if (len < 0 || len > (1 << 20)) return f.FieldError("max_seq_length", "is out of range");
    c.max_seq_length = int(len);
  }
  return c;
}

Result<PromptConfig> ReadPromptConfig(const std::string& dir) {
  PromptConfig out;
  Result<JsonFile> f = JsonFile::Read(dir + "/config_sentence_transformers.json");
  if (!f.ok()) {
    if (f.status().code() == StatusCode::kNotFound) return out;
    return f.status();
  }
  if (f->Has("prompts")) {
    simdjson::dom::object prompts;
    if (f->root()["prompts"].get(prompts)) {
      return f->FieldError("prompts", "must be an object of name → text");
    }
    for (auto [name, text] : prompts) {
      std::string_view t;
      if (text.get(t)) return f->FieldError("prompts", "values must be strings");
      out.prompts[std::string(name)] = std::string(t);
    }
  }
  ORCHID_ASSIGN_OR_RETURN(out.default_prompt_name, f->String("default_prompt_name", ""));
  if (!out.default_prompt_name.empty() && out.prompts.count(out.default_prompt_name) == 0) {
    return f->FieldError("default_prompt_name", "names no prompt in \"prompts\"");
  }
  return out;
}

}  // namespace orchid
