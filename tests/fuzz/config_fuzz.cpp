// Arbitrary bytes as the JSON files of a model directory: config.json (ReadBertConfig,
// ReadDecoderConfig, ReadModernBertConfig, ReadRopeEncoderConfig, ReadDebertaConfig,
// ReadDualEncoderConfig), modules.json,
// the Pooling, Dense and SpladePooling modules' config.json and sentence_bert_config.json
// (ReadSentenceTransformersConfig), a task adapter's adapter_config.json (ReadLoraAdapterConfig,
// ReadLoraAdapters), and a sharded checkpoint's model.safetensors.index.json
// (ParseShardIndex: every shard it accepts is a plain file name, and every listed tensor names one
// of them), and the files the sentence-transformers / transformers precedence reads
// (tokenizer_config.json for ResolveMaxInputLength, config_sentence_transformers.json for
// ReadEncodeConfig, ReadCrossEncoderActivation and PyLate's ReadLateInteractionConfig), Stanford
// ColBERT's artifact.metadata (ReadStanfordColbertConfig), and a static model's config.json,
// tokenizer.json, modules.json and table header (ReadStaticEmbedding). The readers take paths, so
// each input is written into a private temporary directory; they must return an error or a config,
// never crash.
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "checkpoint/checkpoint.h"
#include "description/bert_config.h"
#include "description/deberta_config.h"
#include "description/decoder_config.h"
#include "description/dual_encoder_config.h"
#include "description/lora_adapters.h"
#include "description/modernbert_config.h"
#include "description/rope_encoder_config.h"
#include "description/sentence_transformers.h"
#include "description/static_embedding.h"

namespace {

std::string g_dir;

void Write(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) std::abort();
}

void Remove(const std::string& path) { std::filesystem::remove(path); }

constexpr std::string_view kModules =
    R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},)"
    R"({"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},)"
    R"({"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"}])";
constexpr std::string_view kDenseModules =
    R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},)"
    R"({"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},)"
    R"({"idx":2,"name":"2","path":"2_Dense","type":"sentence_transformers.models.Dense"}])";
constexpr std::string_view kSpladeModules =
    R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.sparse_encoder.models.)"
    R"(MLMTransformer"},{"idx":1,"name":"1","path":"1_Pooling","type":)"
    R"("sentence_transformers.sparse_encoder.models.SpladePooling"}])";
constexpr std::string_view kMeanPooling = R"({"pooling_mode_mean_tokens":true})";
// A valid model2vec directory's files: 2 tokens, a [2, 1] float32 table.
constexpr std::string_view kStaticModules =
    R"([{"idx":0,"name":"0","path":".","type":"sentence_transformers.models.StaticEmbedding"}])";
constexpr std::string_view kStaticConfig = R"({"normalize":true,"max_length":8})";
constexpr std::string_view kStaticTokenizer =
    R"({"model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[UNK]":0,"a":1}}})";
constexpr std::string_view kStaticHeader =
    R"({"embeddings":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]}})";

std::string Safetensors(std::string_view header) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(char(uint64_t(header.size()) >> (8 * i)));
  out.append(header);
  out.append(8, '\0');
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char tmpl[] = "/tmp/orchid_config_fuzz.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) std::abort();
  g_dir = tmpl;
  std::filesystem::create_directory(g_dir + "/1_Pooling");
  std::filesystem::create_directory(g_dir + "/2_Dense");
  std::filesystem::create_directory(g_dir + "/static");
  std::filesystem::create_directory(g_dir + "/adapter");
  std::atexit([] { std::filesystem::remove_all(g_dir); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);

  if (auto idx = orchid::ParseShardIndex(bytes, "index"); idx.ok()) {
    for (const std::string& s : idx->shards) {
      if (s.empty() || s == "." || s == ".." || s.find_first_of("/\\") != std::string::npos ||
          s.find('\0') != std::string::npos) {
        std::abort();
      }
    }
    for (const auto& entry : idx->weight_map) {
      if (entry.second >= idx->shards.size()) std::abort();
    }
  }

  Write(g_dir + "/config.json", bytes);
  (void)orchid::ReadBertConfig(g_dir + "/config.json").ok();
  (void)orchid::ReadDecoderConfig(g_dir + "/config.json").ok();
  (void)orchid::ReadModernBertConfig(g_dir + "/config.json").ok();
  (void)orchid::ReadDebertaConfig(g_dir + "/config.json").ok();
  // A dual encoder's: every size it accepts tiles the image into whole patches.
  if (auto c = orchid::ReadDualEncoderConfig(g_dir + "/config.json"); c.ok()) {
    if (c->patch_size < 1 || c->image_size % c->patch_size != 0 ||
        c->text.hidden_size % c->text.num_attention_heads != 0 ||
        c->vision.hidden_size % c->vision.num_attention_heads != 0) {
      std::abort();
    }
  }
  for (auto variant :
       {orchid::RopeEncoderConfig::Variant::kNomic, orchid::RopeEncoderConfig::Variant::kGte,
        orchid::RopeEncoderConfig::Variant::kJinaV3}) {
    if (auto c = orchid::ReadRopeEncoderConfig(g_dir + "/config.json", variant); c.ok()) {
      for (int d : c->matryoshka_dimensions) {
        if (d < 1 || d > c->hidden_size) std::abort();
      }
    }
  }

  // The bytes as a task adapter's adapter_config.json (a LoRA adapter in a subfolder).
  Write(g_dir + "/adapter/adapter_config.json", bytes);
  if (auto a = orchid::ReadLoraAdapterConfig(g_dir + "/adapter/adapter_config.json", "adapter");
      a.ok() && (a->rank < 1 || !std::isfinite(a->scale()))) {
    std::abort();
  }
  (void)orchid::ReadLoraAdapters(g_dir).ok();

  // The bytes as modules.json, with no other file present.
  Remove(g_dir + "/1_Pooling/config.json");
  Remove(g_dir + "/sentence_bert_config.json");
  Write(g_dir + "/modules.json", bytes);
  (void)orchid::ReadSentenceTransformersConfig(g_dir).ok();

  // A valid modules.json; the bytes as the Pooling config and as sentence_bert_config.json.
  Write(g_dir + "/modules.json", kModules);
  Write(g_dir + "/1_Pooling/config.json", bytes);
  Write(g_dir + "/sentence_bert_config.json", bytes);
  (void)orchid::ReadSentenceTransformersConfig(g_dir).ok();

  // The bytes as a Dense module's config.json, and as SpladePooling's.
  Remove(g_dir + "/sentence_bert_config.json");
  Write(g_dir + "/1_Pooling/config.json", kMeanPooling);
  Write(g_dir + "/modules.json", kDenseModules);
  Write(g_dir + "/2_Dense/config.json", bytes);
  (void)orchid::ReadSentenceTransformersConfig(g_dir).ok();
  Write(g_dir + "/modules.json", kSpladeModules);
  Write(g_dir + "/1_Pooling/config.json", bytes);
  (void)orchid::ReadSentenceTransformersConfig(g_dir).ok();

  // The bytes as tokenizer_config.json (the maximum input length) and as
  // config_sentence_transformers.json (prompts, similarity, a cross-encoder's activation).
  Write(g_dir + "/modules.json", kModules);
  Write(g_dir + "/1_Pooling/config.json", kMeanPooling);
  Write(g_dir + "/tokenizer_config.json", bytes);
  if (auto st = orchid::ReadSentenceTransformersConfig(g_dir); st.ok()) {
    auto limit = orchid::ResolveMaxInputLength(g_dir, *st, 512, 512);
    if (limit.ok() && (limit->tokens <= 0 || limit->tokens > 512)) std::abort();
  }
  Remove(g_dir + "/tokenizer_config.json");
  Write(g_dir + "/config_sentence_transformers.json", bytes);
  (void)orchid::ReadEncodeConfig(g_dir).ok();
  (void)orchid::ReadCrossEncoderActivation(g_dir, 1).ok();
  if (auto li = orchid::ReadLateInteractionConfig(g_dir); li.ok() && li->enabled) {
    if (li->query_length < 3 || li->document_length < 3) std::abort();
  }
  Remove(g_dir + "/config_sentence_transformers.json");
  // The bytes as Stanford ColBERT's artifact.metadata.
  Write(g_dir + "/artifact.metadata", bytes);
  if (auto li = orchid::ReadStanfordColbertConfig(g_dir); li.ok()) {
    if (li->query_length < 3 || li->document_length < 3 || li->dim < 1) std::abort();
  }
  Remove(g_dir + "/artifact.metadata");

  // A static model: the bytes as each of its files in turn, the others valid; and as the
  // table's safetensors header.
  const std::string sdir = g_dir + "/static";
  const std::string files[] = {"/modules.json", "/config.json", "/tokenizer.json"};
  const std::string_view valid[] = {kStaticModules, kStaticConfig, kStaticTokenizer};
  for (size_t f = 0; f < 3; ++f) {
    for (size_t i = 0; i < 3; ++i) Write(sdir + files[i], i == f ? bytes : valid[i]);
    Write(sdir + "/model.safetensors", Safetensors(kStaticHeader));
    if (auto s = orchid::ReadStaticEmbedding(sdir); s.ok() && s->has_value()) {
      if ((*s)->vocab_size != 2 || (*s)->dim != 1) std::abort();
    }
  }
  for (size_t i = 0; i < 3; ++i) Write(sdir + files[i], valid[i]);
  Write(sdir + "/model.safetensors", Safetensors(bytes));
  (void)orchid::ReadStaticEmbedding(sdir).ok();
  return 0;
}
