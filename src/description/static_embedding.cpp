#include "description/static_embedding.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string_view>
#include <vector>

#include "description/json_file.h"
#include "description/model_files.h"

namespace orchid {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Characters (code points) of UTF-8 text, as Python's len() counts a str.
int64_t CodePoints(std::string_view s) {
  int64_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// The table's name, rows and columns from the safetensors header of `path` (8 bytes of
// little-endian length, then that much JSON), without reading the data.
Status ReadTableShape(const std::string& path, StaticEmbeddingConfig* c) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + " not found (the static embedding table)");
  unsigned char len_bytes[8];
  if (!in.read(reinterpret_cast<char*>(len_bytes), 8)) {
    return Status::Corrupt(path + ": too short for a safetensors header");
  }
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | len_bytes[i];
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec || len == 0 || len > (100u << 20) || len > size - 8) {
    return Status::Corrupt(path + ": bad safetensors header length " + std::to_string(len));
  }
  std::string header(size_t(len), '\0');
  if (!in.read(header.data(), std::streamsize(len))) {
    return Status::Corrupt(path + ": truncated safetensors header");
  }
  simdjson::dom::parser parser;
  simdjson::dom::object tensors;
  if (parser.parse(header).get(tensors)) {
    return Status::Corrupt(path + ": the safetensors header is not a JSON object");
  }
  for (const char* unsupported : {"mapping", "weights"}) {
    simdjson::dom::element e;
    if (!tensors[unsupported].get(e)) {
      return Status::Unimplemented(path + ": tensor \"" + unsupported +
                                   "\": vocabulary-quantized model2vec models (a token mapping "
                                   "and per-token weights) are not supported");
    }
  }
  simdjson::dom::object table;
  for (const char* name : {"embedding.weight", "embeddings"}) {
    if (!tensors[name].get(table)) {
      c->table = name;
      break;
    }
  }
  if (c->table.empty()) {
    return Status::Corrupt(path +
                           ": no table \"embedding.weight\" (sentence-transformers) or "
                           "\"embeddings\" (model2vec)");
  }
  const std::string where = path + ": tensor \"" + c->table + "\"";
  std::string_view dtype;
  if (table["dtype"].get_string().get(dtype)) return Status::Corrupt(where + " has no dtype");
  if (dtype != "F32" && dtype != "F16" && dtype != "BF16" && dtype != "F64") {
    return Status::Unimplemented(where + " has dtype " + std::string(dtype) +
                                 "; only float tables (F32, F16, BF16, F64) are supported");
  }
  simdjson::dom::array shape;
  std::vector<int64_t> dims;
  if (!table["shape"].get_array().get(shape)) {
    for (simdjson::dom::element d : shape) {
      int64_t v = 0;
      if (d.get_int64().get(v)) return Status::Corrupt(where + ": bad shape");
      dims.push_back(v);
    }
  }
  if (dims.size() != 2 || dims[0] <= 0 || dims[1] <= 0 || dims[0] > (int64_t(1) << 24) ||
      dims[1] > (1 << 16)) {
    return Status::Corrupt(where + " must be [vocabulary, dim] with both positive");
  }
  c->vocab_size = int32_t(dims[0]);
  c->dim = int(dims[1]);
  return Status::Ok();
}

// What tokenizer.json says for a static model: its vocabulary size (largest id + 1), the
// unknown token's id and the median token length (model2vec's StaticModel: unk_id from the
// model's unk_token, or a Unigram model's unk_id; int(median(len(t) for t in get_vocab()))),
// and its truncation section's max_length (0: none).
struct TokenizerFacts {
  int64_t vocab_size = 0;
  int32_t unk_id = -1;
  int64_t median_length = 0;
  int truncation = 0;
};

Result<TokenizerFacts> ReadTokenizerFacts(const std::string& path) {
  ORCHID_ASSIGN_OR_RETURN(JsonFile f, JsonFile::Read(path));
  TokenizerFacts out;
  std::set<std::string_view> tokens;
  int64_t max_id = -1;
  simdjson::dom::object model;
  if (f.root()["model"].get(model)) return f.FieldError("model", "must be an object");
  simdjson::dom::object vocab;
  simdjson::dom::array pieces;
  if (!model["vocab"].get_object().get(vocab)) {
    for (auto [token, id] : vocab) {
      int64_t v = 0;
      if (id.get_int64().get(v) || v < 0) return f.FieldError("model.vocab", "ids must be >= 0");
      max_id = std::max(max_id, v);
      tokens.insert(token);
    }
  } else if (!model["vocab"].get_array().get(pieces)) {  // Unigram: [[piece, score], ...]
    for (simdjson::dom::element p : pieces) {
      std::string_view piece;
      if (p.at(0).get_string().get(piece)) {
        return f.FieldError("model.vocab", "must hold [piece, score] pairs");
      }
      tokens.insert(piece);
      ++max_id;
    }
  } else {
    return f.FieldError("model.vocab", "is missing");
  }
  simdjson::dom::array added;
  if (!f.root()["added_tokens"].get_array().get(added)) {
    for (simdjson::dom::element t : added) {
      std::string_view content;
      int64_t id = 0;
      if (t["content"].get_string().get(content) || t["id"].get_int64().get(id) || id < 0) {
        return f.FieldError("added_tokens", "entries need a content string and an id >= 0");
      }
      max_id = std::max(max_id, id);
      tokens.insert(content);
    }
  }
  out.vocab_size = max_id + 1;
  std::vector<int64_t> lengths;
  lengths.reserve(tokens.size());
  for (std::string_view t : tokens) lengths.push_back(CodePoints(t));
  if (!lengths.empty()) {
    std::sort(lengths.begin(), lengths.end());
    const size_t n = lengths.size();
    // numpy's median of an even count is the mean of the middle two; int() truncates it.
    out.median_length = n % 2 ? lengths[n / 2] : (lengths[n / 2 - 1] + lengths[n / 2]) / 2;
  }
  std::string_view unk;
  int64_t unk_id = 0;
  if (!model["unk_token"].get_string().get(unk)) {
    out.unk_id = TokenizerJsonId(f.root(), unk).value_or(-1);
  } else if (!model["unk_id"].get_int64().get(unk_id)) {
    out.unk_id = int32_t(unk_id);
  }
  int64_t truncation = 0;
  if (!f.root()["truncation"]["max_length"].get_int64().get(truncation) && truncation > 0) {
    out.truncation = int(std::min<int64_t>(truncation, 1 << 30));
  }
  return out;
}

// model2vec's config.json: normalize (default false) and max_length (absent: 512; null: none).
Status ReadModel2VecConfig(const std::string& path, StaticEmbeddingConfig* c) {
  ORCHID_ASSIGN_OR_RETURN(JsonFile f, JsonFile::Read(path));
  ORCHID_ASSIGN_OR_RETURN(c->normalize, f.Bool("normalize", false));
  if (f.Has("vocabulary_quantization")) {
    return f.FieldError("vocabulary_quantization",
                        "is set; vocabulary-quantized model2vec models are not supported");
  }
  c->max_length = 512;
  c->max_length_source = "model2vec's default (config.json sets no max_length)";
  simdjson::dom::element e;
  if (!f.root()["max_length"].get(e)) {
    int64_t v = 0;
    if (e.is_null()) {
      c->max_length = 0;
      c->max_length_source = "config.json max_length: null (no limit)";
    } else if (e.get_int64().get(v) || v <= 0) {
      return f.FieldError("max_length", "must be a positive integer or null");
    } else {
      c->max_length = int(std::min<int64_t>(v, 1 << 30));
      c->max_length_source = "config.json max_length";
    }
  }
  return Status::Ok();
}

// The StaticEmbedding module's folder ("" for DIR itself) when modules.json starts with one.
Result<std::optional<std::string>> StaticModuleFolder(const std::string& dir) {
  const std::string path = dir + "/modules.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<std::string>();
  ORCHID_ASSIGN_OR_RETURN(JsonFile modules, JsonFile::Read(path, /*require_object=*/false));
  simdjson::dom::array arr;
  if (modules.root().get_array().get(arr)) {
    return Status::Corrupt(path + ": expected a JSON array of modules");
  }
  std::optional<std::string> folder;
  size_t i = 0;
  for (simdjson::dom::element m : arr) {
    std::string_view type, module_path;
    if (m["type"].get_string().get(type) || !EndsWith(type, ".StaticEmbedding")) {
      ++i;
      continue;
    }
    if (i != 0) {
      return Status::Corrupt(path + ": module " + std::to_string(i) +
                             ": a StaticEmbedding must be the first module");
    }
    if (m["path"].get_string().get(module_path)) module_path = "";
    if (module_path == ".") module_path = "";
    if (module_path.find("..") != std::string_view::npos ||
        (!module_path.empty() && module_path.front() == '/')) {
      return Status::Corrupt(path + ": module 0: bad StaticEmbedding \"path\" \"" +
                             std::string(module_path) + "\"");
    }
    folder = std::string(module_path);
    ++i;
  }
  return folder;
}

}  // namespace

Result<std::optional<StaticEmbeddingConfig>> ReadStaticEmbedding(const std::string& dir) {
  ORCHID_ASSIGN_OR_RETURN(std::optional<std::string> folder, StaticModuleFolder(dir));
  const std::string config_path = dir + "/config.json";
  std::error_code ec;
  const bool has_config = std::filesystem::exists(config_path, ec);
  if (!folder) {
    // A model2vec directory from before model2vec wrote modules.json.
    if (!has_config) return std::optional<StaticEmbeddingConfig>();
    ORCHID_ASSIGN_OR_RETURN(JsonFile config, JsonFile::Read(config_path));
    ORCHID_ASSIGN_OR_RETURN(std::string type, config.String("model_type", ""));
    std::string_view arch;
    const bool static_arch =
        !config.root()["architectures"].at(0).get_string().get(arch) && arch == "StaticModel";
    if (type != "model2vec" && !static_arch) return std::optional<StaticEmbeddingConfig>();
    folder = "";
  }
  StaticEmbeddingConfig c;
  c.dir = folder->empty() ? dir : dir + "/" + *folder;
  // model2vec keeps its config.json beside the table at the top; sentence-transformers keeps
  // the module in a folder of its own and has no config.json there.
  c.model2vec = folder->empty() && has_config;
  ORCHID_RETURN_IF_ERROR(ReadTableShape(c.dir + "/" + kWeightsFile, &c));
  const std::string tokenizer_path = c.dir + "/tokenizer.json";
  ORCHID_ASSIGN_OR_RETURN(TokenizerFacts tok, ReadTokenizerFacts(tokenizer_path));
  if (tok.vocab_size != c.vocab_size) {
    return Status::Corrupt(c.dir + "/" + kWeightsFile + ": the table \"" + c.table + "\" has " +
                           std::to_string(c.vocab_size) + " rows but " + tokenizer_path + " has " +
                           std::to_string(tok.vocab_size) +
                           " tokens; there must be one row per token");
  }
  if (c.model2vec) {
    ORCHID_RETURN_IF_ERROR(ReadModel2VecConfig(config_path, &c));
    c.drop_token = tok.unk_id;
    if (c.max_length > 0) c.max_chars = int64_t(c.max_length) * tok.median_length;
  } else if (tok.truncation > 0) {
    // sentence-transformers' StaticEmbedding has no limit of its own; `tokenizers` applies the
    // file's truncation section when it loads tokenizer.json.
    c.max_length = tok.truncation;
    c.max_length_source = (folder->empty() ? "" : *folder + "/") + "tokenizer.json truncation";
  }
  return std::optional<StaticEmbeddingConfig>(std::move(c));
}

}  // namespace orchid
