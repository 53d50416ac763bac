#include "description/qwen3_config.h"

#include <fmt/format.h>

#include "description/json_file.h"

namespace orchid {
Result<Qwen3Config> ReadQwen3Config(const std::string& path) {
  ORCHID_ASSIGN_OR_RETURN(JsonFile f, JsonFile::Read(path));
  Qwen3Config c;
  ORCHID_RETURN_IF_ERROR(f.Size("vocab_size", 1 << 24, &c.vocab_size));
  ORCHID_RETURN_IF_ERROR(f.Size("hidden_size", 1 << 16, &c.hidden_size));
  ORCHID_RETURN_IF_ERROR(f.Size("num_hidden_layers", 1024, &c.num_hidden_layers));
  ORCHID_RETURN_IF_ERROR(f.Size("num_attention_heads", 1024, &c.num_attention_heads));
  if (f.Has("num_key_value_heads")) {
    ORCHID_RETURN_IF_ERROR(f.Size("num_key_value_heads", 1024, &c.num_key_value_heads));
  } else {
    c.num_key_value_heads = c.num_attention_heads;
  }
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    return f.FieldError("num_key_value_heads",
                        fmt::format("({}) does not divide num_attention_heads ({})",
                                    c.num_key_value_heads, c.num_attention_heads));
  }
  if (f.Has("head_dim")) {
    ORCHID_RETURN_IF_ERROR(f.Size("head_dim", 1024, &c.head_dim));
  } else {
    if (c.hidden_size % c.num_attention_heads != 0) {
      return f.FieldError("num_attention_heads", "does not divide hidden_size (and no head_dim)");
    }
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  if (c.head_dim % 2 != 0) return f.FieldError("head_dim", "must be even (rotary embedding)");
  ORCHID_RETURN_IF_ERROR(f.Size("intermediate_size", 1 << 20, &c.intermediate_size));
  ORCHID_RETURN_IF_ERROR(
      f.Size("max_position_embeddings", 1 << 24, &c.max_position_embeddings));
  ORCHID_ASSIGN_OR_RETURN(double eps, f.Number("rms_norm_eps", 1e-6));
  if (!(eps > 0 && eps < 1)) return f.FieldError("rms_norm_eps", "must be in (0, 1)");
  c.rms_norm_eps = float(eps);
  // transformers < 5 writes "rope_theta" (+ "rope_scaling": null); 5.x writes
  // "rope_parameters": {"rope_theta": .., "rope_type": "default"}.
  ORCHID_ASSIGN_OR_RETURN(c.rope_theta, f.Number("rope_theta", 10000.0));
  simdjson::dom::element rope;
  if (!f.root()["rope_parameters"].get(rope) && !rope.is_null()) {
    simdjson::dom::object params;
    if (rope.get_object().get(params)) {
      return f.FieldError("rope_parameters", "must be an object");
    }
    std::string_view type = "default";
    simdjson::dom::element t;
    if (!params["rope_type"].get(t) && !t.is_null() && t.get_string().get(type)) {
      return f.FieldError("rope_parameters.rope_type", "must be a string");
    }
    if (type != "default") {
      return f.FieldError("rope_parameters.rope_type",
                          fmt::format("is \"{}\"; only \"default\" rotary embeddings are supported",
                                      type));
    }
    double theta = 0;
    if (!params["rope_theta"].get(t) && !t.is_null()) {
      if (t.get_double().get(theta)) {
        int64_t i = 0;
        if (t.get_int64().get(i)) return f.FieldError("rope_parameters.rope_theta", "must be a number");
        theta = double(i);
      }
      c.rope_theta = theta;
    }
  }
  if (!(c.rope_theta > 1)) return f.FieldError("rope_theta", "must be greater than 1");
  simdjson::dom::element scaling;
  if (!f.root()["rope_scaling"].get(scaling) && !scaling.is_null()) {
    return f.FieldError("rope_scaling", "is set; scaled rotary embeddings are not supported");
  }
  ORCHID_ASSIGN_OR_RETURN(bool sliding, f.Bool("use_sliding_window", false));
  if (sliding) return f.FieldError("use_sliding_window", "is true; not supported");
  ORCHID_ASSIGN_OR_RETURN(std::string act, f.String("hidden_act", "silu"));
  if (act != "silu") {
    return f.FieldError("hidden_act", fmt::format("is \"{}\"; only \"silu\" is supported", act));
  }
  ORCHID_ASSIGN_OR_RETURN(c.attention_bias, f.Bool("attention_bias", false));
  if (c.attention_bias) return f.FieldError("attention_bias", "is true; not supported");
  ORCHID_ASSIGN_OR_RETURN(c.tie_word_embeddings, f.Bool("tie_word_embeddings", true));
  // Bidirectional variants (pplx-embed-v1): either flag turns causal masking off.
  ORCHID_ASSIGN_OR_RETURN(bool bidirectional, f.Bool("use_bidirectional_attention", false));
  ORCHID_ASSIGN_OR_RETURN(bool is_causal, f.Bool("is_causal", true));
  c.causal = !bidirectional && is_causal;
  return c;
}

}  // namespace orchid
