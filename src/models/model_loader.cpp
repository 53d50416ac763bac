#include "models/model_loader.h"

#include <filesystem>

#include "models/bert.h"
#include "models/bert_config.h"
#include "models/json_file.h"
#include "models/qwen3.h"
#include "models/qwen3_config.h"
#include "models/safetensors.h"
#include "models/sentence_transformers.h"

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

enum class Family { kBert, kXlmRoberta, kQwen3, kUnknown };

struct Architecture {
  Family family = Family::kUnknown;
  bool classifier = false;  // *ForSequenceClassification: a cross-encoder
  bool causal_lm = false;   // *ForCausalLM
};

Architecture Classify(const std::string& arch, const std::string& model_type) {
  auto is = [&](std::initializer_list<const char*> names) {
    for (const char* n : names) {
      if (arch == n) return true;
    }
    return false;
  };
  if (is({"BertModel", "bert", "BertForMaskedLM", "BertForPreTraining"})) return {Family::kBert};
  if (is({"BertForSequenceClassification"})) return {Family::kBert, true};
  if (is({"XLMRobertaModel", "xlm-roberta", "XLMRobertaForMaskedLM", "RobertaModel", "roberta",
          "RobertaForMaskedLM"})) {
    return {Family::kXlmRoberta};
  }
  if (is({"XLMRobertaForSequenceClassification", "RobertaForSequenceClassification"})) {
    return {Family::kXlmRoberta, true};
  }
  // pplx-embed-v1: Qwen3 with bidirectional attention (its config says so) and int8 output.
  if (is({"Qwen3Model", "qwen3", "PPLXQwen3Model"})) return {Family::kQwen3};
  if (is({"Qwen3ForCausalLM"})) return {Family::kQwen3, false, true};
  // Custom heads over the Qwen3 body (pplx-embed-v1's remote code) keep model_type "qwen3".
  if (model_type == "qwen3" || model_type == "bidirectional_pplx_qwen3") return {Family::kQwen3};
  return {};
}

// config.json's "sentence_transformers": {"activation_fn": "torch.nn.modules.linear.Identity"}
// (how sentence-transformers' CrossEncoder records a raw-logit model); sigmoid otherwise.
Result<ScoreActivation> ReadScoreActivation(const JsonFile& config) {
  simdjson::dom::element st;
  if (config.root()["sentence_transformers"].get(st)) return ScoreActivation::kSigmoid;
  std::string_view fn;
  if (st["activation_fn"].get_string().get(fn)) return ScoreActivation::kSigmoid;
  if (fn.find("Identity") != std::string_view::npos) return ScoreActivation::kIdentity;
  if (fn.find("Sigmoid") != std::string_view::npos) return ScoreActivation::kSigmoid;
  return config.FieldError("sentence_transformers.activation_fn",
                           "is \"" + std::string(fn) + "\"; only Sigmoid and Identity are supported");
}

// The id of `token` in tokenizer.json: an added token's id, else model.vocab[token].
Result<int32_t> VocabId(const std::string& tokenizer_path, const std::string& token) {
  ORCHID_ASSIGN_OR_RETURN(JsonFile tok, JsonFile::Read(tokenizer_path));
  simdjson::dom::array added;
  if (!tok.root()["added_tokens"].get_array().get(added)) {
    for (simdjson::dom::element t : added) {
      std::string_view content;
      int64_t id = 0;
      if (!t["content"].get_string().get(content) && content == token &&
          !t["id"].get_int64().get(id)) {
        return int32_t(id);
      }
    }
  }
  int64_t id = 0;
  if (tok.root()["model"]["vocab"][token].get_int64().get(id)) {
    return Status::Corrupt(tokenizer_path + ": the reranker needs the token \"" + token +
                           "\" and the vocabulary has none");
  }
  return int32_t(id);
}

}  // namespace

std::string TokenizerPath(const std::string& dir) { return dir + "/tokenizer.json"; }

Result<std::unique_ptr<Model>> LoadModel(const std::string& dir, const LoadOptions& options) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Status::NotFound("model directory " + dir + " does not exist");
  }
  const std::string config_path = dir + "/config.json";
  ORCHID_ASSIGN_OR_RETURN(JsonFile config, JsonFile::Read(config_path));
  ORCHID_ASSIGN_OR_RETURN(std::string arch, ReadArchitecture(config));
  ORCHID_ASSIGN_OR_RETURN(std::string model_type, config.String("model_type", ""));
  const Architecture kind = Classify(arch, model_type);
  if (kind.family == Family::kUnknown) {
    return Status::InvalidArgument(
        config_path + ": architecture \"" + arch +
        "\" is not supported (supported: BERT, XLM-RoBERTa and Qwen3 encoders and decoders, "
        "BERT / XLM-RoBERTa *ForSequenceClassification cross-encoders, Qwen3-Reranker)");
  }
  ORCHID_ASSIGN_OR_RETURN(SentenceTransformersConfig st, ReadSentenceTransformersConfig(dir));

  const std::string weights_path = dir + "/model.safetensors";
  if (!std::filesystem::exists(weights_path, ec)) {
    return Status::NotFound(weights_path +
                            " not found (only single-file safetensors checkpoints "
                            "are supported)");
  }

  ModelInfo info;
  info.architecture = arch;
  info.default_pooling = st.pooling;
  info.default_normalize = st.normalize;

  if (kind.family == Family::kQwen3) {
    ORCHID_ASSIGN_OR_RETURN(Qwen3Config qwen, ReadQwen3Config(config_path));
    if (st.word_embedding_dimension != 0 && st.word_embedding_dimension != qwen.hidden_size) {
      return Status::Corrupt(dir + ": the pooling config's word_embedding_dimension differs from "
                                   "config.json hidden_size");
    }
    // Without sentence-transformers files a decoder pools its last token (the only one that
    // has seen the whole sequence under causal attention).
    if (!st.present) info.default_pooling = Pooling::kLastToken;
    // pplx-embed-v1 natively answers int8 = round(tanh(x) * 127) (its model card; TEI's Pplx1).
    if (model_type == "bidirectional_pplx_qwen3" || arch == "PPLXQwen3Model") {
      info.native_quantization = NativeQuantization::kTanhInt8;
    }
    info.max_seq_length = st.max_seq_length > 0 && st.max_seq_length < qwen.max_position_embeddings
                              ? st.max_seq_length
                              : qwen.max_position_embeddings;
    // Qwen3-Reranker is a bare Qwen3ForCausalLM checkpoint (no sentence-transformers modules);
    // Qwen3-Embedding carries modules.json with last-token pooling.
    Qwen3Model::ScoreTokens tokens;
    const bool reranker = kind.causal_lm && !st.present;
    if (reranker) {
      ORCHID_ASSIGN_OR_RETURN(tokens.yes, VocabId(TokenizerPath(dir), "yes"));
      ORCHID_ASSIGN_OR_RETURN(tokens.no, VocabId(TokenizerPath(dir), "no"));
      info.default_pooling = Pooling::kLastToken;
      info.default_normalize = false;
      info.score_activation = ScoreActivation::kSigmoid;
    }
    ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> weights,
                            SafetensorsFile::Open(weights_path));
    ORCHID_ASSIGN_OR_RETURN(
        std::unique_ptr<Qwen3Model> model,
        Qwen3Model::Create(qwen, *weights, std::move(info), reranker ? &tokens : nullptr,
                           options.linear_weights));
    return std::unique_ptr<Model>(std::move(model));
  }

  ORCHID_ASSIGN_OR_RETURN(BertConfig bert, ReadBertConfig(config_path));
  if (kind.family == Family::kXlmRoberta) bert.position_offset = bert.pad_token_id + 1;
  if (bert.position_offset >= bert.max_position_embeddings) {
    return config.FieldError("max_position_embeddings", "leaves no position after the padding offset");
  }
  if (st.word_embedding_dimension != 0 && st.word_embedding_dimension != bert.hidden_size) {
    return Status::Corrupt(dir + ": the pooling config's word_embedding_dimension (" +
                           std::to_string(st.word_embedding_dimension) +
                           ") differs from config.json hidden_size (" +
                           std::to_string(bert.hidden_size) + ")");
  }
  const int usable_positions = bert.max_position_embeddings - bert.position_offset;
  info.max_seq_length = st.max_seq_length > 0 && st.max_seq_length < usable_positions
                            ? st.max_seq_length
                            : usable_positions;
  if (kind.classifier) {
    bert.head = kind.family == Family::kBert ? BertConfig::Head::kBertPooler
                                             : BertConfig::Head::kRobertaClassifier;
    info.default_pooling = Pooling::kCls;
    info.default_normalize = false;
    ORCHID_ASSIGN_OR_RETURN(info.score_activation, ReadScoreActivation(config));
  }
  ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> weights,
                          SafetensorsFile::Open(weights_path));
  ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<BertModel> model,
                          BertModel::Create(bert, *weights, std::move(info),
                                            options.linear_weights));
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace orchid
