#include "description/modernbert_config.h"

#include <fmt/format.h>

#include "description/json_file.h"
#include "description/rope_config.h"

namespace orchid {

Result<ModernBertConfig> ReadModernBertConfig(const std::string& path) {
  ORCHID_ASSIGN_OR_RETURN(JsonFile f, JsonFile::Read(path));
  ModernBertConfig c;
  ORCHID_RETURN_IF_ERROR(f.Size("vocab_size", 1 << 24, &c.vocab_size));
  ORCHID_RETURN_IF_ERROR(f.Size("hidden_size", 1 << 16, &c.hidden_size));
  ORCHID_RETURN_IF_ERROR(f.Size("num_hidden_layers", 1024, &c.num_hidden_layers));
  ORCHID_RETURN_IF_ERROR(f.Size("num_attention_heads", 1024, &c.num_attention_heads));
  ORCHID_RETURN_IF_ERROR(f.Size("intermediate_size", 1 << 18, &c.intermediate_size));
  ORCHID_RETURN_IF_ERROR(f.Size("max_position_embeddings", 1 << 24, &c.max_position_embeddings));
  if (c.hidden_size % c.num_attention_heads != 0 || c.head_dim() % 2 != 0) {
    return f.FieldError("num_attention_heads",
                        fmt::format("({}) must divide hidden_size ({}) into even head widths",
                                    c.num_attention_heads, c.hidden_size));
  }
  ORCHID_ASSIGN_OR_RETURN(double eps, f.Number("norm_eps", 1e-5));
  if (!(eps > 0 && eps < 1)) return f.FieldError("norm_eps", "must be in (0, 1)");
  c.norm_eps = float(eps);
  ORCHID_ASSIGN_OR_RETURN(c.norm_bias, f.Bool("norm_bias", false));
  ORCHID_ASSIGN_OR_RETURN(c.attention_bias, f.Bool("attention_bias", false));
  ORCHID_ASSIGN_OR_RETURN(c.mlp_bias, f.Bool("mlp_bias", false));
  ORCHID_ASSIGN_OR_RETURN(c.classifier_bias, f.Bool("classifier_bias", false));
  for (const char* field : {"hidden_activation", "classifier_activation"}) {
    ORCHID_ASSIGN_OR_RETURN(std::string act, f.String(field, "gelu"));
    if (act != "gelu") {
      return f.FieldError(field, fmt::format("is \"{}\"; only \"gelu\" is supported", act));
    }
  }
  // Rotary thetas: transformers 4.x's global_rope_theta / local_rope_theta, or 5.x's
  // rope_parameters per layer type.
  ORCHID_ASSIGN_OR_RETURN(c.global_rope_theta, f.Number("global_rope_theta", 160000.0));
  ORCHID_ASSIGN_OR_RETURN(c.local_rope_theta, f.Number("local_rope_theta", 10000.0));
  simdjson::dom::object rope;
  if (!f.root()["rope_parameters"].get_object().get(rope)) {
    for (const auto& [key, theta] : {std::pair{"full_attention", &c.global_rope_theta},
                                     std::pair{"sliding_attention", &c.local_rope_theta}}) {
      simdjson::dom::object params;
      if (rope[key].get_object().get(params)) continue;
      ORCHID_RETURN_IF_ERROR(ReadRopeParameters(f, params, std::string("rope_parameters.") + key,
                                                c.max_position_embeddings, theta));
    }
  }
  if (!(c.global_rope_theta > 1) || !(c.local_rope_theta > 1)) {
    return f.FieldError("rope_parameters", "rope_theta must be greater than 1");
  }
  simdjson::dom::element scaling;
  if (!f.root()["rope_scaling"].get(scaling) && !scaling.is_null()) {
    return f.FieldError("rope_scaling", "is set; scaled rotary embeddings are not supported");
  }
  // Local layers: layer_types, else every global_attn_every_n_layers-th layer (from 0) is global.
  ORCHID_ASSIGN_OR_RETURN(int64_t local_attention, f.Int("local_attention", 128));
  if (local_attention < 2 || local_attention > (1 << 24)) {
    return f.FieldError("local_attention", "is out of range");
  }
  const int window = int(local_attention / 2) + 1;
  ORCHID_ASSIGN_OR_RETURN(int64_t every, f.Int("global_attn_every_n_layers", 3));
  if (every < 1 || every > 1024) return f.FieldError("global_attn_every_n_layers", "must be >= 1");
  ORCHID_ASSIGN_OR_RETURN(
      c.layer_window,
      ReadLayerWindows(f, c.num_hidden_layers, window, [every](int i) { return i % every != 0; }));
  ORCHID_ASSIGN_OR_RETURN(std::string pooling, f.String("classifier_pooling", "cls"));
  if (pooling != "cls" && pooling != "mean") {
    return f.FieldError("classifier_pooling", "must be \"cls\" or \"mean\"");
  }
  c.classifier_pooling = pooling == "cls" ? Pooling::kCls : Pooling::kMean;
  ORCHID_RETURN_IF_ERROR(ReadClassifierLabels(f, &c.num_labels, &c.labels, &c.multi_label));
  return c;
}

}  // namespace orchid
