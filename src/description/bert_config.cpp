#include "description/bert_config.h"

#include <fmt/format.h>

#include "description/json_file.h"

namespace orchid {

Result<BertConfig> ReadBertConfig(const std::string& path) {
  ORCHID_ASSIGN_OR_RETURN(JsonFile f, JsonFile::Read(path));
  BertConfig c;
  ORCHID_ASSIGN_OR_RETURN(std::string type, f.String("model_type", "bert"));
  // DistilBertConfig names the same sizes its own way; its LayerNorm eps is fixed at 1e-12 and
  // it has no token types.
  const bool distil = type == "distilbert";
  struct Names {
    const char *hidden, *layers, *heads, *intermediate, *act;
  };
  const Names n = distil ? Names{"dim", "n_layers", "n_heads", "hidden_dim", "activation"}
                         : Names{"hidden_size", "num_hidden_layers", "num_attention_heads",
                                 "intermediate_size", "hidden_act"};
  ORCHID_RETURN_IF_ERROR(f.Size("vocab_size", 1 << 24, &c.vocab_size));
  ORCHID_RETURN_IF_ERROR(f.Size(n.hidden, 1 << 16, &c.hidden_size));
  ORCHID_RETURN_IF_ERROR(f.Size(n.layers, 1024, &c.num_hidden_layers));
  ORCHID_RETURN_IF_ERROR(f.Size(n.heads, 1024, &c.num_attention_heads));
  ORCHID_RETURN_IF_ERROR(f.Size(n.intermediate, 1 << 18, &c.intermediate_size));
  ORCHID_RETURN_IF_ERROR(f.Size("max_position_embeddings", 1 << 20, &c.max_position_embeddings));
  if (c.hidden_size % c.num_attention_heads != 0) {
    return f.FieldError(n.heads, fmt::format("({}) does not divide {} ({})", c.num_attention_heads,
                                             n.hidden, c.hidden_size));
  }
  ORCHID_ASSIGN_OR_RETURN(c.hidden_act, f.String(n.act, "gelu"));
  if (c.hidden_act != "gelu") {
    return f.FieldError(n.act, fmt::format("is \"{}\"; only \"gelu\" is supported", c.hidden_act));
  }
  if (distil) {
    c.layout = BertConfig::Layout::kDistilBert;
    c.type_vocab_size = 1;
  } else {
    if (type == "mpnet") {
      // MPNetEmbeddings has no token-type table.
      c.layout = BertConfig::Layout::kMpnet;
      c.type_vocab_size = 1;
      c.relative_attention_num_buckets = 32;
      if (f.Has("relative_attention_num_buckets")) {
        ORCHID_RETURN_IF_ERROR(
            f.Size("relative_attention_num_buckets", 1024, &c.relative_attention_num_buckets));
      }
      // transformers' MPNet sorts relative positions into 32 buckets whatever this says (it only
      // sizes the bias table), so a smaller table would be read past its end.
      if (c.relative_attention_num_buckets < 32) {
        return f.FieldError("relative_attention_num_buckets",
                            "is below 32, the buckets transformers' MPNet looks up");
      }
    } else if (f.Has("type_vocab_size")) {
      ORCHID_RETURN_IF_ERROR(f.Size("type_vocab_size", 1 << 16, &c.type_vocab_size));
    }
    ORCHID_ASSIGN_OR_RETURN(double eps, f.Number("layer_norm_eps", 1e-12));
    if (!(eps > 0 && eps < 1)) return f.FieldError("layer_norm_eps", "must be in (0, 1)");
    c.layer_norm_eps = float(eps);
    ORCHID_ASSIGN_OR_RETURN(std::string pos, f.String("position_embedding_type", "absolute"));
    if (pos != "absolute") {
      return f.FieldError("position_embedding_type",
                          fmt::format("is \"{}\"; only \"absolute\" is supported", pos));
    }
  }
  ORCHID_ASSIGN_OR_RETURN(int64_t pad, f.Int("pad_token_id", 0));
  if (pad < 0 || pad >= c.vocab_size)
    return f.FieldError("pad_token_id", "is out of the vocabulary");
  c.pad_token_id = int(pad);
  ORCHID_RETURN_IF_ERROR(ReadClassifierLabels(f, &c.num_labels, &c.labels, &c.multi_label));
  return c;
}

}  // namespace orchid
