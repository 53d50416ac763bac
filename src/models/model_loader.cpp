#include "models/model_loader.h"

#include <filesystem>

#include "models/bert.h"
#include "models/bert_config.h"
#include "models/json_file.h"
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

bool IsBert(const std::string& arch) {
  return arch == "BertModel" || arch == "bert" || arch == "BertForMaskedLM" ||
         arch == "BertForPreTraining";
}

}  // namespace

std::string TokenizerPath(const std::string& dir) { return dir + "/tokenizer.json"; }

Result<std::unique_ptr<Model>> LoadModel(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Status::NotFound("model directory " + dir + " does not exist");
  }
  const std::string config_path = dir + "/config.json";
  ORCHID_ASSIGN_OR_RETURN(JsonFile config, JsonFile::Read(config_path));
  ORCHID_ASSIGN_OR_RETURN(std::string arch, ReadArchitecture(config));
  if (!IsBert(arch)) {
    return Status::InvalidArgument(config_path + ": architecture \"" + arch +
                                   "\" is not supported (supported: BertModel)");
  }
  ORCHID_ASSIGN_OR_RETURN(BertConfig bert, ReadBertConfig(config_path));
  ORCHID_ASSIGN_OR_RETURN(SentenceTransformersConfig st, ReadSentenceTransformersConfig(dir));
  if (st.word_embedding_dimension != 0 && st.word_embedding_dimension != bert.hidden_size) {
    return Status::Corrupt(dir + ": the pooling config's word_embedding_dimension (" +
                           std::to_string(st.word_embedding_dimension) +
                           ") differs from config.json hidden_size (" +
                           std::to_string(bert.hidden_size) + ")");
  }

  ModelInfo info;
  info.default_pooling = st.pooling;
  info.default_normalize = st.normalize;
  info.max_seq_length = st.max_seq_length > 0 && st.max_seq_length < bert.max_position_embeddings
                            ? st.max_seq_length
                            : bert.max_position_embeddings;

  const std::string weights_path = dir + "/model.safetensors";
  if (!std::filesystem::exists(weights_path, ec)) {
    return Status::NotFound(weights_path +
                            " not found (only single-file safetensors checkpoints "
                            "are supported)");
  }
  ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> weights,
                          SafetensorsFile::Open(weights_path));
  ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<BertModel> model,
                          BertModel::Create(bert, *weights, std::move(info)));
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace orchid
