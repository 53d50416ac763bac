// RopeEncoderConfig: the fields of a post-LN encoder with rotary positions and a gated MLP that
// the forward pass needs: NomicBERT (nomic-embed-text, model_type "nomic_bert") and Alibaba's
// GTE v1.5 / gte-multilingual (model_type "new", or "gte" as transformers names it).
//
// Both are read in the published configs' own field names (nomic's GPT-2 style n_embd, n_layer,
// rotary_emb_base, ...; NewModel's rope_theta, rope_scaling, ...) and in transformers'
// (hidden_size, rope_parameters, ...).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace orchid {

struct RopeEncoderConfig {
  enum class Variant : uint8_t {
    kNomic,  // emb_ln, encoder.layers.N.attn.Wqkv / out_proj, mlp.fc11 (up) / fc12 (gate) / fc2
    kGte,    // encoder.layer.N.attention.qkv_proj / o_proj, mlp.up_gate_proj / down_proj, attn_ln
    // jina-embeddings-v3 (transformers' JinaEmbeddingsV3Model, model_type
    // "jina_embeddings_v3"): XLM-R without position embeddings, rotary (theta 20000), biased
    // Q/K/V/O, a plain GELU MLP (fc1, fc2); as transformers saves it, jina's own tensor names
    // (emb_ln, encoder.layers.N.mixer.Wqkv / out_proj, norm1, mlp.fc1 / fc2, norm2).
    kJinaV3,
  };
  // The gated MLP's activation: act(gate) * up.
  enum class Gate : uint8_t { kSilu, kGelu, kGeluTanh };

  Variant variant = Variant::kNomic;
  int vocab_size = 0;
  int hidden_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int intermediate_size = 0;
  int max_position_embeddings = 0;
  int type_vocab_size = 0;  // 0: no token-type embeddings (gte-base-en-v1.5)
  float layer_norm_eps = 1e-12f;
  Gate gate = Gate::kSilu;
  double rope_theta = 10000.0;
  // NewModel's "ntk" rope_scaling with factor f: theta * f, and every inverse frequency divided
  // by f^(2 / head_dim). 1 without scaling.
  double rope_inv_freq_divisor = 1.0;
  bool qkv_bias = false;      // Q, K, V and the attention output projection
  bool mlp_in_bias = false;   // the gate and up projections
  bool mlp_out_bias = false;  // the down projection
  // false: a plain MLP, down(act(up(h))) (jina-embeddings-v3's fc1 / fc2, both biased).
  bool gated = true;
  // config.json's matryoshka_dimensions (jina-embeddings-v3's own config); empty: none listed.
  std::vector<int> matryoshka_dimensions;
  // Cross-encoders (*ForSequenceClassification: BERT's pooler + classifier on the first token).
  int num_labels = 0;
  std::vector<std::string> labels;
  bool multi_label = false;

  int head_dim() const { return hidden_size / num_attention_heads; }
};

// Reads and checks PATH as `variant`: sizes positive and sane, hidden_size divisible by the heads
// into even head widths, full-width non-interleaved rotary embeddings, a post-LN LayerNorm
// layout, a supported gate activation. Errors name the file and the field.
Result<RopeEncoderConfig> ReadRopeEncoderConfig(const std::string& path,
                                                RopeEncoderConfig::Variant variant);

}  // namespace orchid
