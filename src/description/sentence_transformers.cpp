#include "description/sentence_transformers.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

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

// An optional positive integer limit (null: none): *out, or an error naming the field.
Status LimitField(const JsonFile& f, simdjson::dom::element e, const std::string& field, int* out) {
  if (e.is_null()) return Status::Ok();
  int64_t v = 0;
  if (e.get_int64().get(v) || v <= 0) return f.FieldError(field, "must be a positive integer");
  *out = int(std::min<int64_t>(v, 1 << 30));
  return Status::Ok();
}

// The Transformer module's config in its folder: sentence-transformers reads the first of these
// that exists (Transformer.load; the legacy names come from sentence-transformers 0.x).
Status ReadTransformerConfig(const std::string& folder, SentenceTransformersConfig* c) {
  static const char* const kNames[] = {
      "sentence_bert_config.json",       "sentence_roberta_config.json",
      "sentence_distilbert_config.json", "sentence_camembert_config.json",
      "sentence_albert_config.json",     "sentence_xlm-roberta_config.json",
      "sentence_xlnet_config.json"};
  std::error_code ec;
  for (const char* name : kNames) {
    const std::string path = folder + "/" + name;
    if (!std::filesystem::exists(path, ec)) continue;
    ORCHID_ASSIGN_OR_RETURN(JsonFile f, JsonFile::Read(path));
    ORCHID_ASSIGN_OR_RETURN(c->do_lower_case, f.Bool("do_lower_case", false));
    // 6.3 passes processor_kwargs (tokenizer_args before 6.0) to the tokenizer, whose
    // model_max_length then wins over max_seq_length; otherwise max_seq_length becomes it.
    for (const char* args : {"processor_kwargs", "tokenizer_args"}) {
      simdjson::dom::element e;
      if (f.root()[args]["model_max_length"].get(e)) continue;
      ORCHID_RETURN_IF_ERROR(
          LimitField(f, e, std::string(args) + ".model_max_length", &c->max_seq_length));
      if (c->max_seq_length > 0) {
        c->max_seq_length_source = std::string(name) + " " + args + ".model_max_length";
        return Status::Ok();
      }
    }
    simdjson::dom::element e;
    if (!f.root()["max_seq_length"].get(e)) {
      ORCHID_RETURN_IF_ERROR(LimitField(f, e, "max_seq_length", &c->max_seq_length));
      if (c->max_seq_length > 0) c->max_seq_length_source = std::string(name) + " max_seq_length";
    }
    return Status::Ok();
  }
  return Status::Ok();
}

// "torch.nn.modules.activation.Sigmoid" and the like, as sentence-transformers writes them.
Result<std::optional<ScoreActivation>> ActivationNamed(const JsonFile& f, const std::string& field,
                                                       simdjson::dom::element e) {
  std::string_view fn;
  if (e.is_null()) return std::optional<ScoreActivation>();
  if (e.get_string().get(fn)) return f.FieldError(field, "must be a string");
  // CrossEncoder loads only torch's own classes without trust_remote_code (it warns and keeps
  // its default otherwise).
  if (fn.substr(0, 6) != "torch.") return std::optional<ScoreActivation>();
  if (EndsWith(fn, ".Identity")) return std::optional<ScoreActivation>(ScoreActivation::kIdentity);
  if (EndsWith(fn, ".Sigmoid")) return std::optional<ScoreActivation>(ScoreActivation::kSigmoid);
  return f.FieldError(field,
                      "is \"" + std::string(fn) + "\"; only Sigmoid and Identity are supported");
}

}  // namespace

Result<MaxInputLength> ResolveMaxInputLength(const std::string& dir,
                                             const SentenceTransformersConfig& st,
                                             int config_max_positions, int usable_positions) {
  MaxInputLength out;
  if (st.present && st.max_seq_length > 0) {
    out = {st.max_seq_length, st.max_seq_length_source};
  } else {
    // transformers: model_max_length absent or null is VERY_LARGE_INTEGER (1e30).
    double model_max = 1e30;
    bool given = false;
    Result<JsonFile> tc = JsonFile::Read(dir + "/tokenizer_config.json");
    if (!tc.ok() && tc.status().code() != StatusCode::kNotFound) return tc.status();
    if (tc.ok()) {
      ORCHID_ASSIGN_OR_RETURN(model_max, tc->Number("model_max_length", 1e30));
      if (!(model_max > 0)) return tc->FieldError("model_max_length", "must be positive");
      given = model_max <= 1e20;
    }
    if (config_max_positions > 0 && model_max > config_max_positions) {
      out = {config_max_positions,
             std::string("config.json max_position_embeddings") +
                 (given ? " (below tokenizer_config.json model_max_length)"
                        : " (tokenizer_config.json sets no model_max_length)")};
    } else if (given) {
      out = {int(model_max), "tokenizer_config.json model_max_length"};
    } else {
      out = {usable_positions, "the model's positions (no file sets a limit)"};
    }
  }
  if (out.tokens > usable_positions) {
    out.source +=
        ", capped at the " + std::to_string(usable_positions) + " positions the model embeds";
    out.tokens = usable_positions;
  }
  return out;
}

Result<ScoreActivation> ReadCrossEncoderActivation(const std::string& dir, int num_labels) {
  simdjson::dom::element e;
  Result<JsonFile> st = JsonFile::Read(dir + "/config_sentence_transformers.json");
  if (!st.ok() && st.status().code() != StatusCode::kNotFound) return st.status();
  if (st.ok() && !st->root()["activation_fn"].get(e)) {
    ORCHID_ASSIGN_OR_RETURN(auto a, ActivationNamed(*st, "activation_fn", e));
    if (a) return *a;
  }
  ORCHID_ASSIGN_OR_RETURN(JsonFile config, JsonFile::Read(dir + "/config.json"));
  if (!config.root()["sentence_transformers"]["activation_fn"].get(e)) {
    ORCHID_ASSIGN_OR_RETURN(auto a,
                            ActivationNamed(config, "sentence_transformers.activation_fn", e));
    if (a) return *a;
  }
  if (!config.root()["sbert_ce_default_activation_function"].get(e)) {
    ORCHID_ASSIGN_OR_RETURN(auto a,
                            ActivationNamed(config, "sbert_ce_default_activation_function", e));
    if (a) return *a;
  }
  return num_labels == 1 ? ScoreActivation::kSigmoid : ScoreActivation::kIdentity;
}

const char* SimilarityName(SimilarityFunction f) {
  switch (f) {
    case SimilarityFunction::kCosine:
      return "cosine";
    case SimilarityFunction::kDot:
      return "dot";
    case SimilarityFunction::kEuclidean:
      return "euclidean";
    case SimilarityFunction::kManhattan:
      return "manhattan";
  }
  return "?";
}

double Similarity(SimilarityFunction f, const float* a, const float* b, int n) {
  double dot = 0, aa = 0, bb = 0, l1 = 0, l2 = 0;
  for (int i = 0; i < n; ++i) {
    const double x = a[i], y = b[i];
    dot += x * y;
    aa += x * x;
    bb += y * y;
    l1 += std::abs(x - y);
    l2 += (x - y) * (x - y);
  }
  switch (f) {
    case SimilarityFunction::kCosine:  // F.normalize(eps=1e-12) on each, then the dot product
      return dot / (std::max(std::sqrt(aa), 1e-12) * std::max(std::sqrt(bb), 1e-12));
    case SimilarityFunction::kDot:
      return dot;
    case SimilarityFunction::kEuclidean:  // -torch.cdist(p=2)
      return -std::sqrt(l2);
    case SimilarityFunction::kManhattan:  // -torch.cdist(p=1)
      return -l1;
  }
  return 0;
}

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
  std::string transformer_path;  // the Transformer module's folder ("": the model's own)
  size_t i = 0;
  for (simdjson::dom::element m : arr) {
    const std::string where = modules_path + ": module " + std::to_string(i++);
    std::string_view type, path;
    if (m["type"].get_string().get(type)) return Status::Corrupt(where + ": missing \"type\"");
    if (m["path"].get_string().get(path)) path = "";
    // A sparse encoder's MLMTransformer is the transformer with its masked-LM head.
    if (EndsWith(type, ".Transformer") || EndsWith(type, ".MLMTransformer")) {
      if (path.find("..") != std::string_view::npos || (!path.empty() && path.front() == '/')) {
        return Status::Corrupt(where + ": bad Transformer \"path\" \"" + std::string(path) + "\"");
      }
      transformer_path = std::string(path);
      continue;
    }
    // A static model's table and mean in one module (description/static_embedding.h reads it):
    // it pools, so Dense and Normalize may follow it.
    if (EndsWith(type, ".StaticEmbedding")) {
      if (have_pooling) return Status::Corrupt(where + ": a StaticEmbedding after pooling");
      have_pooling = true;
      c.pooling = Pooling::kMean;
      continue;
    }
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
    // sentence-transformers 2.x-5.3's CLIP module: the whole dual encoder (CLIPModel) at the
    // folder's top level; its image and text features are the embeddings.
    if (EndsWith(type, ".CLIPModel")) {
      if (have_pooling) return Status::Corrupt(where + ": a CLIPModel after pooling");
      if (!path.empty()) {
        return Status::Corrupt(where + ": a CLIPModel module in a subfolder (\"" +
                               std::string(path) + "\") is not supported");
      }
      have_pooling = true;
      c.clip_module = true;
      continue;
    }
    if (EndsWith(type, ".Dense") && !have_pooling && !c.normalize) {
      // PyLate: a projection of every token (no pooling module at all).
      if (path.empty() || path.find("..") != std::string_view::npos || path.front() == '/') {
        return Status::Corrupt(where + ": bad Dense \"path\" \"" + std::string(path) + "\"");
      }
      ORCHID_ASSIGN_OR_RETURN(DenseModule d, ReadDenseConfig(dir + "/" + std::string(path)));
      if (d.tanh) return Status::Corrupt(d.dir + "/config.json: a per-token Dense with Tanh");
      if (!c.token_dense.empty() && d.in_features != c.token_dense.back().out_features) {
        return Status::Corrupt(d.dir + "/config.json: in_features (" +
                               std::to_string(d.in_features) +
                               ") differs from the width before it");
      }
      c.token_dense.push_back(std::move(d));
      continue;
    }
    if (EndsWith(type, ".Dense")) {
      if (!have_pooling || c.normalize || !c.token_dense.empty()) {
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

  ORCHID_RETURN_IF_ERROR(
      ReadTransformerConfig(transformer_path.empty() ? dir : dir + "/" + transformer_path, &c));
  return c;
}

// PyLate's default skiplist: Python's string.punctuation, one word per character.
std::vector<std::string> PunctuationWords() {
  std::vector<std::string> words;
  for (char c : std::string_view("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")) words.emplace_back(1, c);
  return words;
}

Result<LateInteraction> ReadLateInteractionConfig(const std::string& dir) {
  LateInteraction out;
  Result<JsonFile> f = JsonFile::Read(dir + "/config_sentence_transformers.json");
  if (!f.ok()) {
    if (f.status().code() == StatusCode::kNotFound) return out;
    return f.status();
  }
  ORCHID_ASSIGN_OR_RETURN(std::string similarity, f->String("similarity_fn_name", ""));
  ORCHID_ASSIGN_OR_RETURN(std::string type, f->String("model_type", ""));
  out.enabled = similarity == "MaxSim" || type == "ColBERT";
  if (!out.enabled) return out;
  ORCHID_ASSIGN_OR_RETURN(out.query_prefix, f->String("query_prefix", out.query_prefix));
  ORCHID_ASSIGN_OR_RETURN(out.document_prefix, f->String("document_prefix", out.document_prefix));
  ORCHID_ASSIGN_OR_RETURN(int64_t q, f->Int("query_length", out.query_length));
  ORCHID_ASSIGN_OR_RETURN(int64_t d, f->Int("document_length", out.document_length));
  if (q < 3 || q > (1 << 16)) return f->FieldError("query_length", "must be in [3, 65536]");
  if (d < 3 || d > (1 << 16)) return f->FieldError("document_length", "must be in [3, 65536]");
  out.query_length = int(q);
  out.document_length = int(d);
  ORCHID_ASSIGN_OR_RETURN(out.do_query_expansion, f->Bool("do_query_expansion", true));
  ORCHID_ASSIGN_OR_RETURN(out.attend_to_expansion_tokens,
                          f->Bool("attend_to_expansion_tokens", false));
  if (!out.do_query_expansion) out.attend_to_expansion_tokens = false;  // as PyLate
  if (f->Has("skiplist_words")) {
    simdjson::dom::array words;
    if (f->root()["skiplist_words"].get(words)) {
      return f->FieldError("skiplist_words", "must be an array of strings");
    }
    for (simdjson::dom::element w : words) {
      std::string_view s;
      if (w.get(s)) return f->FieldError("skiplist_words", "must be an array of strings");
      out.skiplist_words.emplace_back(s);
    }
  } else {
    out.skiplist_words = PunctuationWords();
  }
  return out;
}

Result<LateInteraction> ReadStanfordColbertConfig(const std::string& dir) {
  LateInteraction out;
  out.enabled = true;
  out.query_prefix = "[unused0]";
  out.document_prefix = "[unused1]";
  out.dim = 128;
  out.skiplist_words = PunctuationWords();
  Result<JsonFile> f = JsonFile::Read(dir + "/artifact.metadata");
  if (!f.ok()) {
    if (f.status().code() == StatusCode::kNotFound) return out;
    return f.status();
  }
  ORCHID_ASSIGN_OR_RETURN(out.query_prefix, f->String("query_token_id", out.query_prefix));
  ORCHID_ASSIGN_OR_RETURN(out.document_prefix, f->String("doc_token_id", out.document_prefix));
  ORCHID_ASSIGN_OR_RETURN(int64_t q, f->Int("query_maxlen", out.query_length));
  ORCHID_ASSIGN_OR_RETURN(int64_t d, f->Int("doc_maxlen", out.document_length));
  ORCHID_ASSIGN_OR_RETURN(int64_t dim, f->Int("dim", out.dim));
  if (q < 3 || q > (1 << 16)) return f->FieldError("query_maxlen", "must be in [3, 65536]");
  if (d < 3 || d > (1 << 16)) return f->FieldError("doc_maxlen", "must be in [3, 65536]");
  if (dim < 1 || dim > (1 << 16)) return f->FieldError("dim", "must be in [1, 65536]");
  out.query_length = int(q);
  out.document_length = int(d);
  out.dim = int(dim);
  ORCHID_ASSIGN_OR_RETURN(out.attend_to_expansion_tokens, f->Bool("attend_to_mask_tokens", false));
  return out;
}

Result<EncodeConfig> ReadEncodeConfig(const std::string& dir) {
  EncodeConfig out;
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
  ORCHID_ASSIGN_OR_RETURN(std::string similarity, f->String("similarity_fn_name", "cosine"));
  for (SimilarityFunction s : {SimilarityFunction::kCosine, SimilarityFunction::kDot,
                               SimilarityFunction::kEuclidean, SimilarityFunction::kManhattan}) {
    if (similarity == SimilarityName(s)) {
      out.similarity = s;
      return out;
    }
  }
  // sentence-transformers 6.3 keeps its default for a name it does not support (3.x-5.x raised).
  return out;
}

}  // namespace orchid
