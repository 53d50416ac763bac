#include "description/dual_encoder_config.h"

#include <fmt/format.h>

#include "description/json_file.h"

namespace orchid {
namespace {

using Act = DualEncoderConfig::Act;

// One section of config.json (text_config, vision_config or the root), with errors naming the
// file and the dotted field. Absent fields take transformers' defaults.
class Section {
 public:
  // present false: a section config.json leaves out (every field its default).
  Section(const JsonFile& f, simdjson::dom::object obj, bool present, std::string prefix)
      : f_(f), obj_(obj), present_(present), prefix_(std::move(prefix)) {}

  Status Error(std::string_view field, const std::string& message) const {
    return f_.FieldError(prefix_ + std::string(field), message);
  }
  bool Has(std::string_view field) const {
    simdjson::dom::element e;
    return present_ && !obj_[field].get(e) && !e.is_null();
  }
  // A positive integer no larger than max, or `fallback` when absent.
  Result<int> Size(std::string_view field, int fallback, int max) const {
    if (!Has(field)) return fallback;
    int64_t v = 0;
    if (obj_[field].get_int64().get(v) || v <= 0 || v > max) {
      return Error(field, fmt::format("must be an integer in [1, {}]", max));
    }
    return int(v);
  }
  Result<int32_t> Id(std::string_view field, int32_t fallback) const {
    if (!Has(field)) return fallback;
    int64_t v = 0;
    if (obj_[field].get_int64().get(v) || v < 0 || v > (int64_t(1) << 30)) {
      return Error(field, "must be a non-negative integer");
    }
    return int32_t(v);
  }
  Result<double> Number(std::string_view field, double fallback) const {
    if (!Has(field)) return fallback;
    double v = 0;
    if (obj_[field].get_double().get(v)) {
      int64_t i = 0;
      if (obj_[field].get_int64().get(i)) return Error(field, "must be a number");
      v = double(i);
    }
    return v;
  }
  Result<std::string> String(std::string_view field, const std::string& fallback) const {
    if (!Has(field)) return fallback;
    std::string_view v;
    if (obj_[field].get_string().get(v)) return Error(field, "must be a string");
    return std::string(v);
  }
  Result<bool> Bool(std::string_view field, bool fallback) const {
    if (!Has(field)) return fallback;
    bool v = false;
    if (obj_[field].get_bool().get(v)) return Error(field, "must be true or false");
    return v;
  }

 private:
  const JsonFile& f_;
  simdjson::dom::object obj_;
  bool present_ = false;
  std::string prefix_;
};

Result<Act> ActOf(const Section& s, const std::string& act) {
  if (act == "quick_gelu") return Act::kQuickGelu;
  if (act == "gelu") return Act::kGelu;
  if (act == "gelu_pytorch_tanh" || act == "gelu_new" || act == "gelu_fast") return Act::kGeluTanh;
  return s.Error("hidden_act", fmt::format("is \"{}\"; supported: quick_gelu, gelu, "
                                           "gelu_pytorch_tanh / gelu_new",
                                           act));
}

// A tower's transformer sizes, with the defaults of the kind's config class.
Status ReadTower(const Section& s, const DualEncoderConfig::Tower& defaults, const char* act,
                 double eps, DualEncoderConfig::Tower* t) {
  ORCHID_ASSIGN_OR_RETURN(t->hidden_size, s.Size("hidden_size", defaults.hidden_size, 1 << 14));
  ORCHID_ASSIGN_OR_RETURN(t->intermediate_size,
                          s.Size("intermediate_size", defaults.intermediate_size, 1 << 16));
  ORCHID_ASSIGN_OR_RETURN(t->num_hidden_layers,
                          s.Size("num_hidden_layers", defaults.num_hidden_layers, 1024));
  ORCHID_ASSIGN_OR_RETURN(t->num_attention_heads,
                          s.Size("num_attention_heads", defaults.num_attention_heads, 1024));
  if (t->hidden_size % t->num_attention_heads != 0) {
    return s.Error("num_attention_heads", "must divide hidden_size");
  }
  ORCHID_ASSIGN_OR_RETURN(double e, s.Number("layer_norm_eps", eps));
  if (!(e > 0 && e < 1)) return s.Error("layer_norm_eps", "must be in (0, 1)");
  t->layer_norm_eps = float(e);
  ORCHID_ASSIGN_OR_RETURN(std::string a, s.String("hidden_act", act));
  ORCHID_ASSIGN_OR_RETURN(t->act, ActOf(s, a));
  return Status::Ok();
}

Result<Section> SubSection(const JsonFile& f, const char* name) {
  simdjson::dom::element e;
  simdjson::dom::object obj;
  // transformers writes both sub-configs; an absent one takes every default.
  if (f.root()[name].get(e) || e.is_null()) return Section(f, obj, false, std::string(name) + ".");
  if (e.get_object().get(obj)) return f.FieldError(name, "must be an object");
  return Section(f, obj, true, std::string(name) + ".");
}

}  // namespace

Result<DualEncoderConfig> ReadDualEncoderConfig(const std::string& path) {
  ORCHID_ASSIGN_OR_RETURN(JsonFile f, JsonFile::Read(path));
  ORCHID_ASSIGN_OR_RETURN(std::string model_type, f.String("model_type", ""));
  DualEncoderConfig c;
  if (model_type == "clip") {
    c.kind = DualEncoderConfig::Kind::kClip;
  } else if (model_type == "siglip") {
    c.kind = DualEncoderConfig::Kind::kSiglip;
  } else if (model_type == "siglip2") {
    return f.FieldError("model_type",
                        "is \"siglip2\": SigLIP2's NaFlex variable resolution is not supported "
                        "(its fixed-resolution checkpoints, model_type \"siglip\", are)");
  } else {
    return f.FieldError("model_type", "must be \"clip\" or \"siglip\" for a dual encoder");
  }
  const bool clip = c.kind == DualEncoderConfig::Kind::kClip;
  ORCHID_ASSIGN_OR_RETURN(Section text, SubSection(f, "text_config"));
  ORCHID_ASSIGN_OR_RETURN(Section vision, SubSection(f, "vision_config"));
  simdjson::dom::object root_obj;
  if (f.root().get_object().get(root_obj)) return Status::Corrupt(path + ": not a JSON object");
  const Section root(f, root_obj, true, "");

  // CLIPTextConfig / CLIPVisionConfig and SiglipTextConfig / SiglipVisionConfig defaults.
  const DualEncoderConfig::Tower text_defaults = clip ? DualEncoderConfig::Tower{512, 2048, 12, 8}
                                                      : DualEncoderConfig::Tower{768, 3072, 12, 12};
  const DualEncoderConfig::Tower vision_defaults{768, 3072, 12, 12};
  const char* act = clip ? "quick_gelu" : "gelu_pytorch_tanh";
  const double eps = clip ? 1e-5 : 1e-6;
  ORCHID_RETURN_IF_ERROR(ReadTower(text, text_defaults, act, eps, &c.text));
  ORCHID_RETURN_IF_ERROR(ReadTower(vision, vision_defaults, act, eps, &c.vision));
  ORCHID_ASSIGN_OR_RETURN(c.vocab_size, text.Size("vocab_size", clip ? 49408 : 32000, 1 << 24));
  ORCHID_ASSIGN_OR_RETURN(c.max_position_embeddings,
                          text.Size("max_position_embeddings", clip ? 77 : 64, 1 << 16));
  ORCHID_ASSIGN_OR_RETURN(c.eos_token_id, text.Id("eos_token_id", 49407));
  ORCHID_ASSIGN_OR_RETURN(c.pad_token_id, text.Id("pad_token_id", 1));
  if (c.pad_token_id >= c.vocab_size)
    return text.Error("pad_token_id", "is outside the vocabulary");
  if (clip && c.eos_token_id >= c.vocab_size && c.eos_token_id != 2) {
    return text.Error("eos_token_id", "is outside the vocabulary");
  }
  ORCHID_ASSIGN_OR_RETURN(c.image_size, vision.Size("image_size", 224, 1 << 14));
  ORCHID_ASSIGN_OR_RETURN(c.patch_size, vision.Size("patch_size", clip ? 32 : 16, 1 << 10));
  if (c.image_size % c.patch_size != 0) {
    return vision.Error("patch_size", "must divide image_size");
  }
  ORCHID_ASSIGN_OR_RETURN(int channels, vision.Size("num_channels", 3, 64));
  if (channels != 3) return vision.Error("num_channels", "must be 3 (RGB images)");
  if (clip) {
    ORCHID_ASSIGN_OR_RETURN(c.projection_dim, root.Size("projection_dim", 512, 1 << 16));
  } else {
    ORCHID_ASSIGN_OR_RETURN(bool head, vision.Bool("vision_use_head", true));
    if (!head) {
      return vision.Error("vision_use_head",
                          "is false: get_image_features has no pooled output without the "
                          "attention-pooling head");
    }
    // SiglipTextConfig.projection_size: the text head's width, default the text hidden size;
    // it must meet the vision tower's pooled width.
    ORCHID_ASSIGN_OR_RETURN(c.projection_dim,
                            text.Size("projection_size", c.text.hidden_size, 1 << 16));
    if (c.projection_dim != c.vision.hidden_size) {
      return text.Error("projection_size", fmt::format("({}) differs from the vision tower's "
                                                       "hidden_size ({})",
                                                       c.projection_dim, c.vision.hidden_size));
    }
  }
  return c;
}

}  // namespace orchid
