#include "description/decoder_config.h"

#include <fmt/format.h>

#include <cmath>

#include "description/json_file.h"

namespace orchid {
Result<DecoderConfig> ReadDecoderConfig(const std::string& path) {
  ORCHID_ASSIGN_OR_RETURN(JsonFile f, JsonFile::Read(path));
  DecoderConfig c;
  // Present and not null (transformers writes "head_dim": null for Mistral-style configs).
  auto given = [&f](const char* field) { return f.Has(field) && !f.root()[field].is_null(); };
  ORCHID_RETURN_IF_ERROR(f.Size("vocab_size", 1 << 24, &c.vocab_size));
  ORCHID_RETURN_IF_ERROR(f.Size("hidden_size", 1 << 16, &c.hidden_size));
  ORCHID_RETURN_IF_ERROR(f.Size("num_hidden_layers", 1024, &c.num_hidden_layers));
  ORCHID_RETURN_IF_ERROR(f.Size("num_attention_heads", 1024, &c.num_attention_heads));
  if (given("num_key_value_heads")) {
    ORCHID_RETURN_IF_ERROR(f.Size("num_key_value_heads", 1024, &c.num_key_value_heads));
  } else {
    c.num_key_value_heads = c.num_attention_heads;
  }
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    return f.FieldError("num_key_value_heads",
                        fmt::format("({}) does not divide num_attention_heads ({})",
                                    c.num_key_value_heads, c.num_attention_heads));
  }
  if (given("head_dim")) {
    ORCHID_RETURN_IF_ERROR(f.Size("head_dim", 1024, &c.head_dim));
  } else {
    if (c.hidden_size % c.num_attention_heads != 0) {
      return f.FieldError("num_attention_heads", "does not divide hidden_size (and no head_dim)");
    }
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  if (c.head_dim % 2 != 0) return f.FieldError("head_dim", "must be even (rotary embedding)");
  ORCHID_RETURN_IF_ERROR(f.Size("intermediate_size", 1 << 20, &c.intermediate_size));
  ORCHID_RETURN_IF_ERROR(f.Size("max_position_embeddings", 1 << 24, &c.max_position_embeddings));
  ORCHID_ASSIGN_OR_RETURN(double eps, f.Number("rms_norm_eps", 1e-6));
  if (!(eps > 0 && eps < 1)) return f.FieldError("rms_norm_eps", "must be in (0, 1)");
  c.rms_norm_eps = float(eps);
  ORCHID_ASSIGN_OR_RETURN(std::string type, f.String("model_type", "qwen3"));
  c.gemma = type == "gemma3_text";
  // transformers < 5 writes "rope_theta" (+ "rope_scaling": null; Gemma 3 also
  // "rope_local_base_freq"); 5.x writes "rope_parameters": {"rope_theta": .., "rope_type":
  // "default"}, per layer type for Gemma 3 ({"full_attention": {..}, "sliding_attention": {..}}).
  ORCHID_ASSIGN_OR_RETURN(c.rope_theta, f.Number("rope_theta", c.gemma ? 1000000.0 : 10000.0));
  ORCHID_ASSIGN_OR_RETURN(c.local_rope_theta, f.Number("rope_local_base_freq", 10000.0));
  simdjson::dom::element rope;
  if (!f.root()["rope_parameters"].get(rope) && !rope.is_null()) {
    simdjson::dom::object params;
    if (rope.get_object().get(params)) {
      return f.FieldError("rope_parameters", "must be an object");
    }
    simdjson::dom::object full, local;
    if (!params["full_attention"].get_object().get(full)) {
      ORCHID_RETURN_IF_ERROR(
          ReadRopeParameters(f, full, "rope_parameters.full_attention", &c.rope_theta));
      if (!params["sliding_attention"].get_object().get(local)) {
        ORCHID_RETURN_IF_ERROR(
            ReadRopeParameters(f, local, "rope_parameters.sliding_attention", &c.local_rope_theta));
      }
    } else {
      ORCHID_RETURN_IF_ERROR(ReadRopeParameters(f, params, "rope_parameters", &c.rope_theta));
    }
  }
  if (!(c.local_rope_theta > 1)) {
    return f.FieldError("rope_local_base_freq", "must be greater than 1");
  }
  if (!(c.rope_theta > 1)) return f.FieldError("rope_theta", "must be greater than 1");
  simdjson::dom::element scaling;
  if (!f.root()["rope_scaling"].get(scaling) && !scaling.is_null()) {
    return f.FieldError("rope_scaling", "is set; scaled rotary embeddings are not supported");
  }
  // Qwen2/Qwen3: a window only on the layers past max_window_layers when use_sliding_window.
  ORCHID_ASSIGN_OR_RETURN(bool sliding, f.Bool("use_sliding_window", false));
  if (sliding) return f.FieldError("use_sliding_window", "is true; not supported");
  if (type == "mistral") {
    if (given("sliding_window")) {
      ORCHID_RETURN_IF_ERROR(f.Size("sliding_window", 1 << 24, &c.sliding_window));
    }
  }
  if (c.gemma) {
    ORCHID_ASSIGN_OR_RETURN(std::string act, f.String("hidden_activation", "gelu_pytorch_tanh"));
    if (act != "gelu_pytorch_tanh") {
      return f.FieldError("hidden_activation",
                          fmt::format("is \"{}\"; only \"gelu_pytorch_tanh\" is supported", act));
    }
    if (given("attn_logit_softcapping")) {
      return f.FieldError("attn_logit_softcapping", "is set; not supported");
    }
    ORCHID_ASSIGN_OR_RETURN(double scalar, f.Number("query_pre_attn_scalar", 256.0));
    if (!(scalar > 0)) return f.FieldError("query_pre_attn_scalar", "must be positive");
    c.attention_scale = float(1.0 / std::sqrt(scalar));
  } else {
    ORCHID_ASSIGN_OR_RETURN(std::string act, f.String("hidden_act", "silu"));
    if (act != "silu") {
      return f.FieldError("hidden_act", fmt::format("is \"{}\"; only \"silu\" is supported", act));
    }
  }
  c.qk_norm = type != "qwen2" && type != "mistral" && type != "llama";
  if (type == "qwen2") {
    c.qkv_bias = true;  // Qwen2Attention: q, k, v with biases, o without
  } else if (type != "mistral") {
    ORCHID_ASSIGN_OR_RETURN(bool attention_bias, f.Bool("attention_bias", false));
    c.qkv_bias = c.o_bias = attention_bias;
    if (type == "llama") {
      ORCHID_ASSIGN_OR_RETURN(c.mlp_bias, f.Bool("mlp_bias", false));
    }
  }
  ORCHID_ASSIGN_OR_RETURN(c.tie_word_embeddings, f.Bool("tie_word_embeddings", true));
  // Bidirectional variants (pplx-embed-v1): either flag turns causal masking off.
  ORCHID_ASSIGN_OR_RETURN(bool bidirectional, f.Bool("use_bidirectional_attention", false));
  ORCHID_ASSIGN_OR_RETURN(bool is_causal, f.Bool("is_causal", true));
  c.causal = !bidirectional && is_causal;
  if (c.gemma) {
    // Local layers: layer_types, else all but every sliding_window_pattern-th layer.
    int window = 4096;
    if (given("sliding_window")) ORCHID_RETURN_IF_ERROR(f.Size("sliding_window", 1 << 24, &window));
    // Bidirectional (EmbeddingGemma): transformers turns the config's window W into
    // |i - j| < W / 2 + 1; causal: 0 <= i - j < W.
    const int local = c.causal ? window : window / 2 + 1;
    int pattern = 6;
    if (given("sliding_window_pattern")) {
      ORCHID_RETURN_IF_ERROR(f.Size("sliding_window_pattern", 1024, &pattern));
    }
    ORCHID_ASSIGN_OR_RETURN(c.layer_window,
                            ReadLayerWindows(f, c.num_hidden_layers, local,
                                             [pattern](int i) { return (i + 1) % pattern != 0; }));
  }
  return c;
}

}  // namespace orchid
