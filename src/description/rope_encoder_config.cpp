#include "description/rope_encoder_config.h"

#include <fmt/format.h>

#include <cmath>
#include <initializer_list>

#include "description/json_file.h"
#include "description/rope_config.h"

namespace orchid {
namespace {

using Gate = RopeEncoderConfig::Gate;

// The first of `names` that config.json has (the published name, then transformers'), or the
// last one when none is there (so that "is missing" names transformers' field).
const char* FieldOf(const JsonFile& f, std::initializer_list<const char*> names) {
  const char* last = nullptr;
  for (const char* n : names) {
    if (f.Has(n)) return n;
    last = n;
  }
  return last;
}

// A flag that must have `want` (or be absent) for the layout orchid implements.
Status Require(const JsonFile& f, const char* field, bool want, const char* why) {
  ORCHID_ASSIGN_OR_RETURN(bool v, f.Bool(field, want));
  if (v != want) return f.FieldError(field, fmt::format("is {}; {}", v ? "true" : "false", why));
  return Status::Ok();
}

// rope_parameters ({"rope_type": "default", "rope_theta": x}, transformers 5), if present.
Status ReadRopeParametersField(const JsonFile& f, double* theta) {
  simdjson::dom::object rope;
  if (f.root()["rope_parameters"].get_object().get(rope)) return Status::Ok();
  return ReadRopeParameters(f, rope, "rope_parameters", 0, theta);
}

Result<Gate> GateOf(const JsonFile& f, const char* field, const std::string& act) {
  if (act == "silu" || act == "swiglu" || act == "swish") return Gate::kSilu;
  if (act == "gelu") return Gate::kGelu;
  if (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast") {
    return Gate::kGeluTanh;
  }
  return f.FieldError(field, fmt::format("is \"{}\"; supported: silu/swiglu, gelu, gelu_new, "
                                         "gelu_pytorch_tanh",
                                         act));
}

Status ReadNomic(const JsonFile& f, RopeEncoderConfig* c) {
  // nomic-embed's own config names the sizes as GPT-2 does; transformers' NomicBertConfig as BERT.
  const char* hidden = FieldOf(f, {"n_embd", "hidden_size"});
  ORCHID_RETURN_IF_ERROR(f.Size(hidden, 1 << 16, &c->hidden_size));
  ORCHID_RETURN_IF_ERROR(
      f.Size(FieldOf(f, {"n_layer", "num_hidden_layers"}), 1024, &c->num_hidden_layers));
  ORCHID_RETURN_IF_ERROR(
      f.Size(FieldOf(f, {"n_head", "num_attention_heads"}), 1024, &c->num_attention_heads));
  const char* inner = FieldOf(f, {"n_inner", "intermediate_size"});
  ORCHID_RETURN_IF_ERROR(f.Size(inner, 1 << 18, &c->intermediate_size));
  const char* positions = FieldOf(f, {"n_positions", "max_position_embeddings"});
  if (f.Has(positions)) {
    ORCHID_RETURN_IF_ERROR(f.Size(positions, 1 << 24, &c->max_position_embeddings));
  } else {
    c->max_position_embeddings = 2048;  // NomicBertConfig's default
  }
  const char* eps_field = FieldOf(f, {"layer_norm_epsilon", "layer_norm_eps"});
  ORCHID_ASSIGN_OR_RETURN(double eps, f.Number(eps_field, 1e-12));
  if (!(eps > 0 && eps < 1)) return f.FieldError(eps_field, "must be in (0, 1)");
  c->layer_norm_eps = float(eps);
  c->type_vocab_size = 2;
  if (f.Has("type_vocab_size")) {
    ORCHID_ASSIGN_OR_RETURN(int64_t types, f.Int("type_vocab_size"));
    if (types < 0 || types > (1 << 16)) return f.FieldError("type_vocab_size", "is out of range");
    c->type_vocab_size = int(types);
  }
  // Rotary embeddings: rotary_emb_base (nomic), rope_parameters (transformers), default 1000.
  c->rope_theta = 1000.0;
  ORCHID_ASSIGN_OR_RETURN(c->rope_theta, f.Number("rotary_emb_base", c->rope_theta));
  ORCHID_RETURN_IF_ERROR(ReadRopeParametersField(f, &c->rope_theta));
  ORCHID_ASSIGN_OR_RETURN(double fraction, f.Number("rotary_emb_fraction", 1.0));
  if (fraction != 1.0) {
    return f.FieldError("rotary_emb_fraction",
                        "is not 1; only full-width rotary embeddings are "
                        "supported");
  }
  ORCHID_RETURN_IF_ERROR(Require(f, "rotary_emb_interleaved", false,
                                 "only rotate-half (non-interleaved) rotary embeddings are "
                                 "supported"));
  simdjson::dom::element scaling;
  if (!f.root()["rotary_scaling_factor"].get(scaling) && !scaling.is_null()) {
    return f.FieldError("rotary_scaling_factor",
                        "is set; scaled rotary embeddings are not "
                        "supported");
  }
  ORCHID_RETURN_IF_ERROR(Require(f, "prenorm", false, "only post-LN NomicBERT is supported"));
  ORCHID_RETURN_IF_ERROR(Require(f, "use_rms_norm", false, "only LayerNorm is supported"));
  ORCHID_ASSIGN_OR_RETURN(int64_t moe, f.Int("moe_every_n_layers", 0));
  if (moe != 0) {
    return f.FieldError("moe_every_n_layers",
                        "is set; mixture-of-experts NomicBERT "
                        "(nomic-embed-text-v2-moe) is not supported");
  }
  const char* act_field = FieldOf(f, {"activation_function", "hidden_act"});
  ORCHID_ASSIGN_OR_RETURN(std::string act, f.String(act_field, "swiglu"));
  ORCHID_ASSIGN_OR_RETURN(c->gate, GateOf(f, act_field, act));
  // Biases: nomic's flags (none in nomic-embed-text); transformers' NomicBert has none.
  ORCHID_ASSIGN_OR_RETURN(c->qkv_bias, f.Bool("qkv_proj_bias", false));
  ORCHID_ASSIGN_OR_RETURN(c->mlp_in_bias, f.Bool("mlp_fc1_bias", false));
  ORCHID_ASSIGN_OR_RETURN(c->mlp_out_bias, f.Bool("mlp_fc2_bias", false));
  return Status::Ok();
}

// BERT-style fields: the sizes, layer_norm_eps (default `eps`) and type_vocab_size (default 1).
Status ReadBertStyleSizes(const JsonFile& f, double default_eps, RopeEncoderConfig* c) {
  ORCHID_RETURN_IF_ERROR(f.Size("hidden_size", 1 << 16, &c->hidden_size));
  ORCHID_RETURN_IF_ERROR(f.Size("num_hidden_layers", 1024, &c->num_hidden_layers));
  ORCHID_RETURN_IF_ERROR(f.Size("num_attention_heads", 1024, &c->num_attention_heads));
  ORCHID_RETURN_IF_ERROR(f.Size("intermediate_size", 1 << 18, &c->intermediate_size));
  ORCHID_ASSIGN_OR_RETURN(double eps, f.Number("layer_norm_eps", default_eps));
  if (!(eps > 0 && eps < 1)) return f.FieldError("layer_norm_eps", "must be in (0, 1)");
  c->layer_norm_eps = float(eps);
  ORCHID_ASSIGN_OR_RETURN(int64_t types, f.Int("type_vocab_size", 1));
  if (types < 0 || types > (1 << 16)) return f.FieldError("type_vocab_size", "is out of range");
  c->type_vocab_size = int(types);
  return Status::Ok();
}

Status ReadGte(const JsonFile& f, RopeEncoderConfig* c) {
  ORCHID_RETURN_IF_ERROR(ReadBertStyleSizes(f, 1e-12, c));
  ORCHID_RETURN_IF_ERROR(f.Size("max_position_embeddings", 1 << 24, &c->max_position_embeddings));
  ORCHID_ASSIGN_OR_RETURN(std::string act, f.String("hidden_act", "gelu"));
  ORCHID_ASSIGN_OR_RETURN(c->gate, GateOf(f, "hidden_act", act));
  ORCHID_ASSIGN_OR_RETURN(std::string pos, f.String("position_embedding_type", "rope"));
  if (pos != "rope") {
    return f.FieldError("position_embedding_type",
                        fmt::format("is \"{}\"; only \"rope\" is supported", pos));
  }
  ORCHID_ASSIGN_OR_RETURN(std::string norm, f.String("layer_norm_type", "layer_norm"));
  if (norm != "layer_norm") {
    return f.FieldError("layer_norm_type",
                        fmt::format("is \"{}\"; only \"layer_norm\" is supported", norm));
  }
  ORCHID_RETURN_IF_ERROR(Require(f, "logn_attention_scale", false, "not supported"));
  ORCHID_RETURN_IF_ERROR(Require(f, "logn_attention_clip1", false, "not supported"));
  ORCHID_RETURN_IF_ERROR(Require(f, "pack_qkv", true, "only packed QKV checkpoints are supported"));
  // Rotary embeddings: rope_theta and rope_scaling (NewModel), rope_parameters (transformers).
  c->rope_theta = 160000.0;  // GteConfig's default (gte-multilingual)
  ORCHID_ASSIGN_OR_RETURN(c->rope_theta, f.Number("rope_theta", c->rope_theta));
  ORCHID_RETURN_IF_ERROR(ReadRopeParametersField(f, &c->rope_theta));
  simdjson::dom::element scaling;
  if (!f.root()["rope_scaling"].get(scaling) && !scaling.is_null()) {
    std::string_view type;
    double factor = 0;
    simdjson::dom::object s;
    if (scaling.get_object().get(s) ||
        (s["type"].get_string().get(type) && s["rope_type"].get_string().get(type)) ||
        s["factor"].get_double().get(factor)) {
      return f.FieldError("rope_scaling", "must be {\"type\": \"ntk\", \"factor\": number}");
    }
    if (type != "ntk") {
      return f.FieldError("rope_scaling", fmt::format("has type \"{}\"; only NewModel's \"ntk\" "
                                                      "scaling is supported",
                                                      type));
    }
    if (!(factor >= 1 && factor <= 1024)) {
      return f.FieldError("rope_scaling", "factor must be in [1, 1024]");
    }
    // NewModel's NTKScalingRotaryEmbedding (as TEI reads it): base * factor, and the
    // frequencies divided by factor^(2 / head_dim).
    c->rope_theta *= factor;
    if (c->hidden_size % c->num_attention_heads == 0) {
      c->rope_inv_freq_divisor = std::pow(factor, 2.0 / double(c->head_dim()));
    }
  }
  // The published GTE layout: biased QKV, output and down projections, an unbiased up_gate.
  c->qkv_bias = true;
  c->mlp_in_bias = false;
  c->mlp_out_bias = true;
  return Status::Ok();
}

Status ReadJinaV3(const JsonFile& f, RopeEncoderConfig* c) {
  ORCHID_RETURN_IF_ERROR(ReadBertStyleSizes(f, 1e-5, c));
  c->max_position_embeddings = 8194;  // JinaEmbeddingsV3Config's default
  if (f.Has("max_position_embeddings")) {
    ORCHID_RETURN_IF_ERROR(f.Size("max_position_embeddings", 1 << 24, &c->max_position_embeddings));
  }
  ORCHID_ASSIGN_OR_RETURN(std::string act, f.String("hidden_act", "gelu"));
  if (act != "gelu") {
    return f.FieldError("hidden_act",
                        fmt::format("is \"{}\"; only exact \"gelu\" is supported", act));
  }
  c->gated = false;
  c->gate = Gate::kGelu;
  // JinaEmbeddingsV3Config.default_theta, or a top-level rope_theta (transformers 4's field,
  // which transformers 5 still converts); rope_parameters (transformers 5) overrides both.
  ORCHID_ASSIGN_OR_RETURN(c->rope_theta, f.Number("rope_theta", 20000.0));
  ORCHID_RETURN_IF_ERROR(ReadRopeParametersField(f, &c->rope_theta));
  c->qkv_bias = true;
  c->mlp_in_bias = true;
  c->mlp_out_bias = true;
  simdjson::dom::element dims;
  if (!f.root()["matryoshka_dimensions"].get(dims) && !dims.is_null()) {
    simdjson::dom::array list;
    if (dims.get_array().get(list)) {
      return f.FieldError("matryoshka_dimensions", "must be a list of positive integers");
    }
    for (simdjson::dom::element e : list) {
      int64_t d = 0;
      if (e.get_int64().get(d) || d < 1 || d > c->hidden_size) {
        return f.FieldError("matryoshka_dimensions",
                            "must list integers between 1 and hidden_size");
      }
      c->matryoshka_dimensions.push_back(int(d));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<RopeEncoderConfig> ReadRopeEncoderConfig(const std::string& path,
                                                RopeEncoderConfig::Variant variant) {
  ORCHID_ASSIGN_OR_RETURN(JsonFile f, JsonFile::Read(path));
  RopeEncoderConfig c;
  c.variant = variant;
  ORCHID_RETURN_IF_ERROR(f.Size("vocab_size", 1 << 24, &c.vocab_size));
  if (variant == RopeEncoderConfig::Variant::kNomic) {
    ORCHID_RETURN_IF_ERROR(ReadNomic(f, &c));
  } else if (variant == RopeEncoderConfig::Variant::kJinaV3) {
    ORCHID_RETURN_IF_ERROR(ReadJinaV3(f, &c));
  } else {
    ORCHID_RETURN_IF_ERROR(ReadGte(f, &c));
  }
  if (c.hidden_size % c.num_attention_heads != 0 || c.head_dim() % 2 != 0) {
    return f.FieldError("num_attention_heads",
                        fmt::format("({}) must divide the hidden size ({}) into even head widths",
                                    c.num_attention_heads, c.hidden_size));
  }
  if (!(c.rope_theta > 1) || !std::isfinite(c.rope_theta)) {
    return f.FieldError("rope_theta", "must be a finite number greater than 1");
  }
  ORCHID_RETURN_IF_ERROR(ReadClassifierLabels(f, &c.num_labels, &c.labels, &c.multi_label));
  return c;
}

}  // namespace orchid
