#include "description/decoder_config.h"

#include <fmt/format.h>

#include <cmath>

#include "description/json_file.h"
#include "description/rope_config.h"

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
  // Rotary embeddings: transformers < 5 writes "rope_theta" and "rope_scaling" (Gemma 3 also
  // "rope_local_base_freq"); 5.x writes "rope_parameters": {"rope_theta", "rope_type", ...}, per
  // layer type for Gemma 3 ({"full_attention": {..}, "sliding_attention": {..}}).
  ORCHID_ASSIGN_OR_RETURN(c.local_rope_theta, f.Number("rope_local_base_freq", 10000.0));
  simdjson::dom::object params, full, sliding;
  if (c.gemma && !f.root()["rope_parameters"].get_object().get(params) &&
      !params["full_attention"].get_object().get(full)) {
    ORCHID_ASSIGN_OR_RETURN(c.rope_theta, f.Number("rope_theta", 1000000.0));
    ORCHID_RETURN_IF_ERROR(ReadRopeParameters(f, full, "rope_parameters.full_attention",
                                              c.max_position_embeddings, &c.rope_theta));
    if (!params["sliding_attention"].get_object().get(sliding)) {
      ORCHID_RETURN_IF_ERROR(ReadRopeParameters(f, sliding, "rope_parameters.sliding_attention",
                                                c.max_position_embeddings, &c.local_rope_theta));
    }
  } else {
    ORCHID_RETURN_IF_ERROR(ReadRotary(f, c.gemma ? 1000000.0 : 10000.0, c.max_position_embeddings,
                                      &c.rope_theta, &c.rope_scaling));
    if (c.gemma && c.rope_scaling.type != RopeType::kDefault) {
      return f.FieldError("rope_scaling",
                          "is set; Gemma 3's scaled rotary embeddings are not supported");
    }
  }
  if (!(c.local_rope_theta > 1)) {
    return f.FieldError("rope_local_base_freq", "must be greater than 1");
  }
  if (!(c.rope_theta > 1)) return f.FieldError("rope_theta", "must be greater than 1");
  if (c.rope_scaling.type == RopeType::kDynamic && c.head_dim <= 2) {
    return f.FieldError("head_dim", "must be above 2 for dynamic rotary scaling");
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
  // Sliding windows, in AttentionOptions' terms (causal: 0 <= i - j < window; bidirectional:
  // |i - j| < window).
  c.layer_window.assign(size_t(c.num_hidden_layers), 0);
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
    return c;
  }
  // MistralConfig: sliding_window defaults to 4096, null turns it off; one mask for every layer.
  // Qwen2Config / Qwen3Config: sliding_window (default 4096) only when use_sliding_window, on
  // the layers from max_window_layers (default 28) on, unless layer_types names them.
  const bool mistral = type == "mistral";
  const bool qwen = type == "qwen2" || type == "qwen3";
  ORCHID_ASSIGN_OR_RETURN(bool use_window, f.Bool("use_sliding_window", false));
  if (mistral || (qwen && use_window)) {
    int window = f.Has("sliding_window") ? 0 : 4096;
    if (given("sliding_window")) ORCHID_RETURN_IF_ERROR(f.Size("sliding_window", 1 << 24, &window));
    int first = 28;
    if (given("max_window_layers")) {
      ORCHID_ASSIGN_OR_RETURN(int64_t m, f.Int("max_window_layers"));
      if (m < 0 || m > 1 << 20) return f.FieldError("max_window_layers", "is out of range");
      first = int(m);
    }
    // transformers' bidirectional sliding mask is |i - j| <= W: W + 1 in our terms.
    const int w = window == 0 ? 0 : (c.causal ? window : window + 1);
    if (w > 0 && mistral) {
      c.layer_window.assign(size_t(c.num_hidden_layers), w);
    } else if (w > 0) {
      ORCHID_ASSIGN_OR_RETURN(
          c.layer_window,
          ReadLayerWindows(f, c.num_hidden_layers, w, [first](int i) { return i >= first; }));
    }
  }
  return c;
}

}  // namespace orchid
