#include "description/registry.h"

#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "description/json_file.h"
#include "description/model_files.h"
#include "description/sentence_transformers.h"

namespace orchid {
namespace {

// The architecture named by config.json: architectures[0], else model_type.
Result<std::string> ReadArchitecture(const JsonFile& config) {
  simdjson::dom::array archs;
  if (!config.root()["architectures"].get_array().get(archs) && archs.size() > 0) {
    std::string_view name;
    if (archs.at(0).get_string().get(name)) {
      return config.FieldError("architectures", "must be an array of strings");
    }
    return std::string(name);
  }
  ORCHID_ASSIGN_OR_RETURN(std::string type, config.String("model_type", ""));
  if (type.empty()) {
    return Status::Corrupt(config.path() + ": neither \"architectures\" nor \"model_type\" is set");
  }
  return type;
}

struct Architecture {
  bool known = false;
  FamilyKind family = FamilyKind::kBert;
  bool xlmr = false;        // RoBERTa-style positions (offset by padding_idx + 1)
  bool classifier = false;  // *ForSequenceClassification: a cross-encoder
  bool causal_lm = false;   // *ForCausalLM
  RopeEncoderConfig::Variant rope_variant = RopeEncoderConfig::Variant::kNomic;
};

Architecture Classify(const std::string& arch, const std::string& model_type) {
  auto is = [&](std::initializer_list<const char*> names) {
    for (const char* n : names) {
      if (arch == n) return true;
    }
    return false;
  };
  if (is({"BertModel", "bert", "BertForMaskedLM", "BertForPreTraining", "DistilBertModel",
          "distilbert", "DistilBertForMaskedLM", "MPNetModel", "mpnet", "MPNetForMaskedLM",
          "HF_ColBERT"})) {
    return {true, FamilyKind::kBert};
  }
  if (is({"BertForSequenceClassification", "DistilBertForSequenceClassification",
          "MPNetForSequenceClassification"})) {
    return {true, FamilyKind::kBert, false, true};
  }
  if (is({"XLMRobertaModel", "xlm-roberta", "XLMRobertaForMaskedLM", "RobertaModel", "roberta",
          "RobertaForMaskedLM", "CamembertModel", "camembert", "CamembertForMaskedLM"})) {
    return {true, FamilyKind::kBert, true};
  }
  if (is({"XLMRobertaForSequenceClassification", "RobertaForSequenceClassification",
          "CamembertForSequenceClassification"})) {
    return {true, FamilyKind::kBert, true, true};
  }
  // pplx-embed-v1: Qwen3 with bidirectional attention (its config says so) and int8 output.
  if (is({"Qwen3Model", "qwen3", "PPLXQwen3Model", "Qwen2Model", "qwen2", "MistralModel", "mistral",
          "LlamaModel", "llama"})) {
    return {true, FamilyKind::kDecoder};
  }
  if (is({"ModernBertModel", "modernbert", "ModernBertForMaskedLM"})) {
    return {true, FamilyKind::kModernBert};
  }
  if (is({"ModernBertForSequenceClassification"})) {
    return {true, FamilyKind::kModernBert, false, true};
  }
  if (is({"DebertaV2Model", "deberta-v2", "DebertaV2ForMaskedLM"})) {
    return {true, FamilyKind::kDeberta};
  }
  if (is({"DebertaV2ForSequenceClassification"})) {
    return {true, FamilyKind::kDeberta, false, true};
  }
  // NomicBERT (nomic-embed-text) and GTE v1.5 / gte-multilingual ("new"; transformers: "gte").
  if (is({"NomicBertModel", "nomic_bert", "NomicBertForPreTraining", "NomicBertForMaskedLM"})) {
    return {true, FamilyKind::kRopeEncoder};
  }
  if (is({"NewModel", "new", "GteModel", "gte", "NewForMaskedLM", "GteForMaskedLM"})) {
    return {true, FamilyKind::kRopeEncoder, false, false, false, RopeEncoderConfig::Variant::kGte};
  }
  // jina-embeddings-v3 as transformers 5 defines it (jinaai/jina-embeddings-v3-hf), its task
  // adapters in subfolders (lora_adapters.h).
  if (is({"JinaEmbeddingsV3Model", "jina_embeddings_v3", "JinaEmbeddingsV3ForMaskedLM"})) {
    return {true,  FamilyKind::kRopeEncoder,           false, false,
            false, RopeEncoderConfig::Variant::kJinaV3};
  }
  if (is({"NewForSequenceClassification", "GteForSequenceClassification"})) {
    return {true, FamilyKind::kRopeEncoder, false, true, false, RopeEncoderConfig::Variant::kGte};
  }
  // Gemma 3's text decoder (EmbeddingGemma: bidirectional, sliding-window local layers).
  if (is({"Gemma3TextModel", "gemma3_text", "Gemma3ForCausalLM"})) {
    return {true, FamilyKind::kDecoder};
  }
  // *ForCausalLM: Qwen3-Reranker (no sentence-transformers modules), or an embedder published
  // with its LM class (gte-Qwen2-instruct: Qwen2ForCausalLM with modules.json).
  if (is({"Qwen3ForCausalLM", "Qwen2ForCausalLM", "MistralForCausalLM", "LlamaForCausalLM"})) {
    return {true, FamilyKind::kDecoder, false, false, true};
  }
  // jina-embeddings-v3 under another class name (not a task head: those have weights orchid
  // does not serve).
  if (model_type == "jina_embeddings_v3" && arch.find("For") == std::string::npos) {
    return {true,  FamilyKind::kRopeEncoder,           false, false,
            false, RopeEncoderConfig::Variant::kJinaV3};
  }
  if (is({"CLIPModel", "clip", "SiglipModel", "siglip", "Siglip2Model", "siglip2"})) {
    return {true, FamilyKind::kDualEncoder};
  }
  // Custom heads over the Qwen3 body (pplx-embed-v1's remote code) keep model_type "qwen3".
  if (model_type == "qwen3" || model_type == "bidirectional_pplx_qwen3") {
    return {true, FamilyKind::kDecoder};
  }
  return {};
}

// The id of `token` in tokenizer.json: an added token's id, else model.vocab[token].
Result<int32_t> VocabId(const std::string& tokenizer_path, const std::string& token) {
  ORCHID_ASSIGN_OR_RETURN(JsonFile tok, JsonFile::Read(tokenizer_path));
  std::optional<int32_t> id = TokenizerJsonId(tok.root(), token);
  if (!id) {
    return Status::Corrupt(tokenizer_path + ": the reranker needs the token \"" + token +
                           "\" and the vocabulary has none");
  }
  return *id;
}

Status CheckWordEmbeddingDimension(const ModelSpec& spec, const SentenceTransformersConfig& st) {
  if (st.word_embedding_dimension == 0 || st.word_embedding_dimension == spec.info.hidden_size) {
    return Status::Ok();
  }
  return Status::Corrupt(spec.dir + ": the pooling config's word_embedding_dimension (" +
                         std::to_string(st.word_embedding_dimension) +
                         ") differs from config.json hidden_size (" +
                         std::to_string(spec.info.hidden_size) + ")");
}

// info.max_seq_length and its source by ResolveMaxInputLength, from config.json's raw
// max_position_embeddings. Families with rotary positions only (no learned table) take an
// explicit sentence-transformers limit beyond it, as transformers runs them.
Status SetMaxInputLength(const SentenceTransformersConfig& st, int config_max_positions,
                         bool rotary, ModelSpec* spec) {
  ModelInfo& info = spec->info;
  if (rotary && st.present && st.max_seq_length > info.max_position_embeddings) {
    info.max_position_embeddings = st.max_seq_length;
  }
  ORCHID_ASSIGN_OR_RETURN(
      MaxInputLength limit,
      ResolveMaxInputLength(spec->dir, st, config_max_positions, info.max_position_embeddings));
  info.max_seq_length = limit.tokens;
  info.max_seq_length_source = std::move(limit.source);
  return Status::Ok();
}

// A cross-encoder / classifier head: a scorer with the config's labels, the pooling its head
// reads, no normalisation, and the activation sentence-transformers' CrossEncoder applies.
Status DescribeScorer(HeadKind head, int num_labels, const std::vector<std::string>& labels,
                      bool multi_label, Pooling pooling, ModelSpec* spec) {
  spec->head = head;
  ModelInfo& info = spec->info;
  info.task = ModelTask::kScore;
  info.num_labels = num_labels;
  info.labels = labels;
  info.multi_label = multi_label;
  info.default_pooling = pooling;
  info.default_normalize = false;
  ORCHID_ASSIGN_OR_RETURN(info.score_activation, ReadCrossEncoderActivation(spec->dir, num_labels));
  return Status::Ok();
}

Status DescribeBert(const Architecture& kind, const JsonFile& config,
                    const SentenceTransformersConfig& st, ModelSpec* spec) {
  ORCHID_ASSIGN_OR_RETURN(spec->bert, ReadBertConfig(spec->config_path));
  BertConfig& bert = spec->bert;
  if (kind.xlmr) bert.position_offset = bert.pad_token_id + 1;
  // MPNetEmbeddings numbers positions from its fixed padding_idx (1) + 1, whatever the config.
  if (bert.layout == BertConfig::Layout::kMpnet) bert.position_offset = 2;
  if (bert.position_offset >= bert.max_position_embeddings) {
    return config.FieldError("max_position_embeddings",
                             "leaves no position after the padding offset");
  }
  ModelInfo& info = spec->info;
  info.vocab_size = bert.vocab_size;
  info.type_vocab_size = bert.type_vocab_size;
  info.hidden_size = bert.hidden_size;
  // The engine checks positions against this: the offset uses up the first positions.
  info.max_position_embeddings = bert.max_position_embeddings - bert.position_offset;
  ORCHID_RETURN_IF_ERROR(CheckWordEmbeddingDimension(*spec, st));
  ORCHID_RETURN_IF_ERROR(
      SetMaxInputLength(st, bert.max_position_embeddings, /*rotary=*/false, spec));
  if (kind.classifier) {
    HeadKind head = HeadKind::kBertPooler;
    bert.head = BertConfig::Head::kBertPooler;
    if (kind.xlmr || bert.layout == BertConfig::Layout::kMpnet) {
      head = HeadKind::kRobertaClassifier;
      bert.head = BertConfig::Head::kRobertaClassifier;
    } else if (bert.layout == BertConfig::Layout::kDistilBert) {
      head = HeadKind::kDistilBertClassifier;
      bert.head = BertConfig::Head::kDistilBertClassifier;
    }
    return DescribeScorer(head, bert.num_labels, bert.labels, bert.multi_label, Pooling::kCls,
                          spec);
  }
  return Status::Ok();
}

Status DescribeDecoder(const Architecture& kind, const std::string& model_type,
                       const SentenceTransformersConfig& st, ModelSpec* spec) {
  ORCHID_ASSIGN_OR_RETURN(spec->decoder, ReadDecoderConfig(spec->config_path));
  const DecoderConfig& qwen = spec->decoder;
  ModelInfo& info = spec->info;
  info.vocab_size = qwen.vocab_size;
  info.type_vocab_size = 1;
  info.hidden_size = qwen.hidden_size;
  info.max_position_embeddings = qwen.max_position_embeddings;
  info.causal = qwen.causal;
  ORCHID_RETURN_IF_ERROR(CheckWordEmbeddingDimension(*spec, st));
  // Without sentence-transformers files a decoder pools its last token (the only one that
  // has seen the whole sequence under causal attention).
  if (!st.present) info.default_pooling = Pooling::kLastToken;
  // pplx-embed-v1 natively answers int8 = round(tanh(x) * 127) (its model card; TEI's Pplx1).
  if (model_type == "bidirectional_pplx_qwen3" || info.architecture == "PPLXQwen3Model") {
    info.native_quantization = NativeQuantization::kTanhInt8;
  }
  ORCHID_RETURN_IF_ERROR(
      SetMaxInputLength(st, qwen.max_position_embeddings, /*rotary=*/true, spec));
  // Qwen3-Reranker is a bare Qwen3ForCausalLM checkpoint (no sentence-transformers modules);
  // Qwen3-Embedding carries modules.json with last-token pooling.
  if (kind.causal_lm && !st.present && model_type == "qwen3") {
    spec->head = HeadKind::kYesNoLogit;
    ORCHID_ASSIGN_OR_RETURN(spec->yes_token, VocabId(TokenizerPath(spec->dir), "yes"));
    ORCHID_ASSIGN_OR_RETURN(spec->no_token, VocabId(TokenizerPath(spec->dir), "no"));
    for (int32_t id : {spec->yes_token, spec->no_token}) {
      if (id < 0 || id >= qwen.vocab_size) {
        return Status::InvalidArgument(spec->dir +
                                       ": the reranker's yes/no token ids are outside the "
                                       "vocabulary");
      }
    }
    info.task = ModelTask::kScore;
    info.num_labels = 1;
    info.pair_format = PairFormat::kQwen3RerankerChat;
    info.default_pooling = Pooling::kLastToken;
    info.default_normalize = false;
    info.score_activation = ScoreActivation::kSigmoid;
  }
  return Status::Ok();
}

Status DescribeModernBert(const Architecture& kind, const SentenceTransformersConfig& st,
                          ModelSpec* spec) {
  ORCHID_ASSIGN_OR_RETURN(spec->modernbert, ReadModernBertConfig(spec->config_path));
  const ModernBertConfig& c = spec->modernbert;
  ModelInfo& info = spec->info;
  info.vocab_size = c.vocab_size;
  info.type_vocab_size = 1;
  info.hidden_size = c.hidden_size;
  info.max_position_embeddings = c.max_position_embeddings;
  ORCHID_RETURN_IF_ERROR(CheckWordEmbeddingDimension(*spec, st));
  ORCHID_RETURN_IF_ERROR(SetMaxInputLength(st, c.max_position_embeddings, /*rotary=*/true, spec));
  if (kind.classifier) {
    return DescribeScorer(HeadKind::kModernBertHead, c.num_labels, c.labels, c.multi_label,
                          c.classifier_pooling, spec);
  }
  return Status::Ok();
}

Status DescribeRopeEncoder(const Architecture& kind, const SentenceTransformersConfig& st,
                           ModelSpec* spec) {
  ORCHID_ASSIGN_OR_RETURN(spec->rope_encoder,
                          ReadRopeEncoderConfig(spec->config_path, kind.rope_variant));
  const RopeEncoderConfig& c = spec->rope_encoder;
  ModelInfo& info = spec->info;
  info.vocab_size = c.vocab_size;
  info.type_vocab_size = c.type_vocab_size;
  info.hidden_size = c.hidden_size;
  info.max_position_embeddings = c.max_position_embeddings;
  ORCHID_RETURN_IF_ERROR(CheckWordEmbeddingDimension(*spec, st));
  ORCHID_RETURN_IF_ERROR(SetMaxInputLength(st, c.max_position_embeddings, /*rotary=*/true, spec));
  if (kind.classifier) {
    return DescribeScorer(HeadKind::kBertPooler, c.num_labels, c.labels, c.multi_label,
                          Pooling::kCls, spec);
  }
  if (c.variant == RopeEncoderConfig::Variant::kJinaV3) {
    // Without sentence-transformers modules: mean pooling and L2 normalisation, as the model
    // card and transformers' documentation compute jina-embeddings-v3's embeddings.
    if (!st.present) info.default_normalize = true;
    info.matryoshka_dimensions = c.matryoshka_dimensions;
    ORCHID_ASSIGN_OR_RETURN(spec->adapters, ReadLoraAdapters(spec->dir));
    for (const LoraAdapterConfig& a : spec->adapters) info.tasks.push_back(a.task);
  }
  return Status::Ok();
}

Status DescribeDeberta(const Architecture& kind, const SentenceTransformersConfig& st,
                       ModelSpec* spec) {
  ORCHID_ASSIGN_OR_RETURN(spec->deberta, ReadDebertaConfig(spec->config_path));
  const DebertaConfig& c = spec->deberta;
  ModelInfo& info = spec->info;
  info.vocab_size = c.vocab_size;
  info.type_vocab_size = c.type_vocab_size;
  info.hidden_size = c.hidden_size;
  info.max_position_embeddings = c.max_position_embeddings;
  ORCHID_RETURN_IF_ERROR(CheckWordEmbeddingDimension(*spec, st));
  ORCHID_RETURN_IF_ERROR(SetMaxInputLength(st, c.max_position_embeddings, /*rotary=*/false, spec));
  if (kind.classifier) {
    return DescribeScorer(HeadKind::kDebertaPooler, c.num_labels, c.labels, c.multi_label,
                          Pooling::kCls, spec);
  }
  return Status::Ok();
}

// A static model: its table is the whole model (no positions: any length fits, up to the
// encode rules' max_length).
// The pad token's id: tokenizer_config.json's pad_token (a string or {"content": ...}) looked up
// in tokenizer.json, else config.json's.
Result<int32_t> PadTokenId(const std::string& dir, int32_t config_pad_id) {
  Result<JsonFile> tc = JsonFile::Read(dir + "/tokenizer_config.json");
  // A SentencePiece model has no tokenizer.json to look the token up in: config.json's id.
  if (!tc.ok() || TokenizerPath(dir).ends_with(".model")) return config_pad_id;
  simdjson::dom::element pad;
  if (tc->root()["pad_token"].get(pad) || pad.is_null()) return config_pad_id;
  std::string_view token;
  if (pad.get_string().get(token) && pad["content"].get_string().get(token)) {
    return tc->FieldError("pad_token", "must be a string or an object with \"content\"");
  }
  Result<int32_t> id = VocabId(TokenizerPath(dir), std::string(token));
  if (!id.ok()) {
    return Status::Corrupt(dir + "/tokenizer.json: the pad token \"" + std::string(token) +
                           "\" of tokenizer_config.json is not in the vocabulary");
  }
  return *id;
}

Status DescribeDualEncoder(const SentenceTransformersConfig& st, ModelSpec* spec) {
  ORCHID_ASSIGN_OR_RETURN(spec->dual_encoder, ReadDualEncoderConfig(spec->config_path));
  const DualEncoderConfig& c = spec->dual_encoder;
  const bool clip = c.kind == DualEncoderConfig::Kind::kClip;
  if (st.present && !st.clip_module && (st.dense.size() > 0 || st.splade_log1p > 0)) {
    return Status::Corrupt(spec->dir + "/modules.json: modules after a dual encoder");
  }
  ModelInfo& info = spec->info;
  info.vocab_size = c.vocab_size;
  info.type_vocab_size = 1;
  info.hidden_size = c.text.hidden_size;
  info.embedding_dim = c.projection_dim;
  info.max_position_embeddings = c.max_position_embeddings;
  info.causal = clip;
  // The text tower pools one position (the end of the text, or SigLIP's last); what a
  // sentence-transformers Pooling module might say does not apply.
  info.default_pooling = Pooling::kLastToken;
  info.image = ImageInput{c.image_size, c.patch_size, clip};
  if (clip) {
    info.text.end = c.eos_token_id == 2 ? TextInput::End::kFirstMaxId : TextInput::End::kFirstEos;
    info.text.eos_id = c.eos_token_id;
  } else {
    info.text.pad_to = c.max_position_embeddings;
    ORCHID_ASSIGN_OR_RETURN(info.text.pad_id, PadTokenId(spec->dir, c.pad_token_id));
    if (info.text.pad_id >= c.vocab_size) {
      return Status::Corrupt(spec->dir + ": the pad token's id is outside the vocabulary");
    }
  }
  return SetMaxInputLength(st, c.max_position_embeddings, /*rotary=*/false, spec);
}

Status DescribeStatic(StaticEmbeddingConfig c, ModelSpec* spec) {
  ORCHID_ASSIGN_OR_RETURN(SentenceTransformersConfig st, ReadSentenceTransformersConfig(spec->dir));
  ModelInfo& info = spec->info;
  spec->family = FamilyKind::kStatic;
  info.architecture = c.model2vec ? "StaticModel" : "StaticEmbedding";
  info.vocab_size = c.vocab_size;
  info.type_vocab_size = 1;
  info.hidden_size = c.dim;
  constexpr int kNoLimit = 1 << 20;  // tokens: the table embeds a text of any length
  info.max_position_embeddings = kNoLimit;
  info.max_seq_length = c.max_length > 0 ? c.max_length : kNoLimit;
  info.max_seq_length_source =
      c.max_length > 0 ? c.max_length_source : "none (a static model embeds any length)";
  info.default_pooling = Pooling::kMean;
  info.default_normalize = c.model2vec ? c.normalize : st.normalize;
  if (!st.dense.empty()) {
    if (st.dense.front().in_features != c.dim) {
      return Status::Corrupt(st.dense.front().dir + "/config.json: in_features (" +
                             std::to_string(st.dense.front().in_features) +
                             ") differs from the static table's width (" + std::to_string(c.dim) +
                             ")");
    }
    spec->dense = st.dense;
    info.embedding_dim = st.dense.back().out_features;
  }
  spec->static_embedding = std::move(c);
  return Status::Ok();
}

// PyLate ColBERT: per-token Dense modules (modules.json) and the query/document settings of
// config_sentence_transformers.json. The projection is a head over the family's per-token
// hidden states (spec.token_dense); the rest is the gateway's (tokens in, vectors out).
Status DescribeLateInteraction(const std::string& dir, const SentenceTransformersConfig& st,
                               ModelSpec* spec) {
  ORCHID_ASSIGN_OR_RETURN(LateInteraction li, ReadLateInteractionConfig(dir));
  SentenceTransformersConfig stanford;
  if (spec->info.architecture == "HF_ColBERT" && st.token_dense.empty() && !li.enabled) {
    // Stanford's layout: the projection is the checkpoint's own linear.weight.
    ORCHID_ASSIGN_OR_RETURN(li, ReadStanfordColbertConfig(dir));
    DenseModule projection;
    projection.dir = dir;
    projection.in_features = spec->info.hidden_size;
    projection.out_features = li.dim;
    projection.bias = false;
    stanford.token_dense.push_back(projection);
  }
  const SentenceTransformersConfig& modules = stanford.token_dense.empty() ? st : stanford;
  if (modules.token_dense.empty() && !li.enabled) return Status::Ok();
  if (modules.token_dense.empty() || !li.enabled) {
    return Status::Corrupt(dir + (li.enabled ? ": a ColBERT (MaxSim) model needs a Dense "
                                               "projection module after the Transformer"
                                             : ": a Dense module without Pooling, but "
                                               "config_sentence_transformers.json is not a "
                                               "ColBERT's (similarity_fn_name \"MaxSim\")"));
  }
  if (spec->info.task != ModelTask::kEmbed || spec->info.causal || spec->info.sparse) {
    return Status::InvalidArgument(dir + ": late interaction needs a bidirectional encoder");
  }
  if (modules.token_dense.front().in_features != spec->info.hidden_size) {
    return Status::Corrupt(modules.token_dense.front().dir + "/config.json: in_features (" +
                           std::to_string(modules.token_dense.front().in_features) +
                           ") differs from config.json hidden_size (" +
                           std::to_string(spec->info.hidden_size) + ")");
  }
  spec->token_dense = modules.token_dense;
  spec->info.late_interaction = std::move(li);
  spec->info.token_embedding_dim = modules.token_dense.back().out_features;
  return Status::Ok();
}

// BGE-M3 (FlagEmbedding's BGEM3FlagModel): an XLM-R encoder whose directory also holds
// colbert_linear.pt (nn.Linear(H, H)) and sparse_linear.pt (nn.Linear(H, 1)), PyTorch state
// dicts. Both run on every token as one projection of H + 1 outputs; the pooled row stays the
// dense vector (CLS, normalised: the sentence-transformers modules).
Status DescribeBgeM3(const std::string& dir, ModelSpec* spec) {
  std::error_code ec;
  const std::string colbert = dir + "/colbert_linear.pt", sparse = dir + "/sparse_linear.pt";
  const bool has_colbert = std::filesystem::exists(colbert, ec);
  const bool has_sparse = std::filesystem::exists(sparse, ec);
  if (!has_colbert && !has_sparse) return Status::Ok();
  if (!has_colbert || !has_sparse) {
    return Status::Corrupt(dir + ": a BGE-M3 model needs both colbert_linear.pt and " +
                           "sparse_linear.pt; " + (has_colbert ? "sparse" : "colbert") +
                           "_linear.pt is missing");
  }
  ModelInfo& info = spec->info;
  if (spec->family != FamilyKind::kBert || info.task != ModelTask::kEmbed || info.causal ||
      info.sparse || info.late_interaction.enabled || !spec->dense.empty()) {
    return Status::InvalidArgument(dir +
                                   ": colbert_linear.pt and sparse_linear.pt (BGE-M3) "
                                   "need a BERT or XLM-R encoder without other heads");
  }
  DenseModule head;
  head.dir = dir;
  head.in_features = info.hidden_size;
  head.out_features = info.hidden_size + 1;
  // FlagEmbedding's colbert_dim -1: the ColBERT projection is H x H.
  head.torch_parts = {{colbert, info.hidden_size}, {sparse, 1}};
  spec->token_dense = {head};
  info.token_embedding_dim = head.out_features;
  info.bge_m3 = true;
  return Status::Ok();
}

}  // namespace

const char* FamilyName(FamilyKind f) {
  switch (f) {
    case FamilyKind::kBert:
      return "BERT";
    case FamilyKind::kDecoder:
      return "decoder";
    case FamilyKind::kModernBert:
      return "ModernBERT";
    case FamilyKind::kRopeEncoder:
      return "rotary encoder";
    case FamilyKind::kDeberta:
      return "DeBERTa-v2";
    case FamilyKind::kDualEncoder:
      return "dual encoder (CLIP / SigLIP)";
    case FamilyKind::kStatic:
      return "static embedding";
  }
  return "?";
}

const char* BackendName(BackendKind b) { return b == BackendKind::kCpu ? "cpu" : "cuda"; }

std::string TokenizerPath(const std::string& dir) {
  Result<std::optional<StaticEmbeddingConfig>> s = ReadStaticEmbedding(dir);
  if (s.ok() && s->has_value()) return (*s)->dir + "/tokenizer.json";
  // SigLIP v1 as transformers saves it: its slow tokenizer's SentencePiece model only.
  std::error_code ec;
  if (!std::filesystem::exists(dir + "/tokenizer.json", ec) &&
      std::filesystem::exists(dir + "/spiece.model", ec)) {
    return dir + "/spiece.model";
  }
  return dir + "/tokenizer.json";
}

Result<ModelSpec> DescribeModel(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Status::NotFound("model directory " + dir + " does not exist");
  }
  ModelSpec spec;
  spec.dir = dir;
  spec.config_path = dir + "/config.json";
  ORCHID_ASSIGN_OR_RETURN(std::optional<StaticEmbeddingConfig> static_model,
                          ReadStaticEmbedding(dir));
  if (static_model) {
    ORCHID_RETURN_IF_ERROR(DescribeStatic(std::move(*static_model), &spec));
    return spec;
  }
  ORCHID_ASSIGN_OR_RETURN(JsonFile config, JsonFile::Read(spec.config_path));
  ORCHID_ASSIGN_OR_RETURN(std::string arch, ReadArchitecture(config));
  ORCHID_ASSIGN_OR_RETURN(std::string model_type, config.String("model_type", ""));
  const Architecture kind = Classify(arch, model_type);
  if (!kind.known) {
    return Status::InvalidArgument(
        spec.config_path + ": architecture \"" + arch +
        "\" is not supported (supported: BERT, RoBERTa, XLM-RoBERTa, CamemBERT, DistilBERT and "
        "MPNet encoders and their *ForSequenceClassification cross-encoders; ModernBERT "
        "encoders and cross-encoders; NomicBERT encoders; GTE (\"new\") encoders and "
        "rerankers; jina-embeddings-v3 (JinaEmbeddingsV3Model) with its task adapters; "
        "DeBERTa-v2/v3 encoders and classifiers; Qwen3, Qwen2, Mistral, Llama and "
        "Gemma 3 decoders; static embeddings (model2vec, sentence-transformers StaticEmbedding); "
        "Qwen3-Reranker; CLIP and SigLIP dual encoders (CLIPModel, SiglipModel))");
  }
  ORCHID_ASSIGN_OR_RETURN(SentenceTransformersConfig st, ReadSentenceTransformersConfig(dir));
  if (!HasWeights(dir)) return NoWeightsIn(dir);
  spec.family = kind.family;
  spec.info.architecture = arch;
  spec.info.default_pooling = st.pooling;
  spec.info.default_normalize = st.normalize;
  spec.info.include_prompt = st.include_prompt;
  if (kind.family == FamilyKind::kDecoder) {
    ORCHID_RETURN_IF_ERROR(DescribeDecoder(kind, model_type, st, &spec));
  } else if (kind.family == FamilyKind::kModernBert) {
    ORCHID_RETURN_IF_ERROR(DescribeModernBert(kind, st, &spec));
  } else if (kind.family == FamilyKind::kRopeEncoder) {
    ORCHID_RETURN_IF_ERROR(DescribeRopeEncoder(kind, st, &spec));
  } else if (kind.family == FamilyKind::kDeberta) {
    ORCHID_RETURN_IF_ERROR(DescribeDeberta(kind, st, &spec));
  } else if (kind.family == FamilyKind::kDualEncoder) {
    ORCHID_RETURN_IF_ERROR(DescribeDualEncoder(st, &spec));
  } else {
    ORCHID_RETURN_IF_ERROR(DescribeBert(kind, config, st, &spec));
  }
  if (st.splade_log1p > 0) {
    // SPLADE: the masked-LM head's logits over the vocabulary.
    if (spec.family != FamilyKind::kBert || spec.info.task != ModelTask::kEmbed ||
        (arch != "BertForMaskedLM" && arch != "DistilBertForMaskedLM")) {
      return Status::InvalidArgument(dir +
                                     ": SpladePooling needs a BertForMaskedLM or "
                                     "DistilBertForMaskedLM checkpoint, not " +
                                     arch);
    }
    spec.head = HeadKind::kSpladeMlm;
    spec.splade_log1p = st.splade_log1p;
    spec.info.sparse = true;
    spec.info.embedding_dim = spec.info.vocab_size;
    spec.info.default_pooling = Pooling::kMax;
    spec.info.default_normalize = false;
  }
  ORCHID_RETURN_IF_ERROR(DescribeLateInteraction(dir, st, &spec));
  if (!st.dense.empty()) {
    if (spec.info.task != ModelTask::kEmbed || spec.info.sparse) {
      return Status::Corrupt(dir + ": sentence-transformers Dense modules on a scorer");
    }
    if (st.dense.front().in_features != spec.info.hidden_size) {
      return Status::Corrupt(st.dense.front().dir + "/config.json: in_features (" +
                             std::to_string(st.dense.front().in_features) +
                             ") differs from config.json hidden_size (" +
                             std::to_string(spec.info.hidden_size) + ")");
    }
    spec.dense = st.dense;
    spec.info.embedding_dim = st.dense.back().out_features;
  }
  ORCHID_RETURN_IF_ERROR(DescribeBgeM3(dir, &spec));
  return spec;
}

Status CheckBackend(const ModelSpec& spec, BackendKind backend) {
  if (backend == BackendKind::kCpu) return Status::Ok();
  // What every op of the model needs is the CUDA backend's to say (backends/cuda/op_support.h,
  // asked while the family is loaded and planned, before any batch). How a batch pools is the
  // one thing an op call does not show: the pooling kernel has the default modes only, and
  // cannot leave a prompt's tokens out.
  auto refuse = [&spec](const std::string& why) {
    return Status::Unimplemented(spec.dir + " (" + spec.info.architecture +
                                 "): the cuda backend cannot serve it: " + why);
  };
  if (spec.family == FamilyKind::kStatic) {
    return refuse(
        "a static embedding model is a table lookup and a mean, served by the cpu backend "
        "(--device cpu)");
  }
  if (spec.family == FamilyKind::kDualEncoder) {
    return refuse(
        "its kernels have no pixel input, quick_gelu or tanh GELU yet (image towers run on the "
        "cpu backend: --device cpu)");
  }
  if (spec.info.late_interaction.enabled) {
    return refuse("late interaction (ColBERT) needs per-token output, which it does not serve");
  }
  if (spec.info.bge_m3) {
    return refuse(
        "BGE-M3's sparse and ColBERT outputs need per-token output, which it does not "
        "serve");
  }
  const Pooling pooling = spec.info.default_pooling;
  if (pooling == Pooling::kMax || pooling == Pooling::kMeanSqrtLen ||
      pooling == Pooling::kWeightedMean) {
    return refuse(std::string("its pooling kernel has no ") + PoolingName(pooling) + " pooling");
  }
  if (!spec.info.include_prompt) {
    return refuse(
        "its pooling kernel cannot leave the prompt's tokens out (include_prompt: "
        "false)");
  }
  return Status::Ok();
}

}  // namespace orchid
