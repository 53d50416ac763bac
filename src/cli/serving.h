// What `orchid serve`, `orchid worker` and `orchid gateway` share: loading a model into an
// engine behind a scheduler, and waiting for SIGINT/SIGTERM.
#pragma once

#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/metrics.h"
#include "core/status.h"
#include "engine/engine.h"
#include "gateway/gateway.h"
#include "rpc/convert.h"
#include "tokenizer/tokenizer.h"
#include "worker/token_budget_scheduler.h"

namespace orchid::cli {

// "models/all-MiniLM-L6-v2/" → "all-MiniLM-L6-v2"; "." → the current directory's name.
std::string DefaultModelName(const std::string& dir);

// One --model of `serve` or `gateway`: "NAME=DIR" or "DIR".
struct ModelSpec {
  std::string name;  // empty: --served-model-name or the directory's name
  std::string dir;
};
// A directory that exists as given is never split, so paths with '=' still work.
ModelSpec ParseModelSpec(const std::string& s);

// Splits "host:port" ("[v6]:port" too); false when malformed.
bool ParseHostPort(const std::string& s, std::string* host, uint16_t* port);

struct SchedulerFlags {
  int max_batch_tokens = 16384;
  int max_batch_sequences = 0;
  int64_t max_queued_tokens = 1 << 20;
  int pipeline_depth = 2;
  int threads = 0;                   // engine compute threads; 0 = all cores
  std::string device = "cpu";        // "cpu" | "cuda"
  std::string cuda_graphs = "lazy";  // "off" | "lazy" | "eager-capture-all"
  std::string dtype;                 // "" (the engine's own) | "float32" | "bfloat16" | "int8"
  // --dtype int8's fidelity gate (runtime/cpu_engine.h, Int8Options).
  double int8_min_mean_cosine = 0.999;
  double int8_min_cosine = 0.995;
  bool int8_serve_anyway = false;
  std::string int8_cache = "auto";   // "auto" (DefaultInt8CacheDir) | "off" | a directory
  std::string gemm;                  // "" (auto) | "auto" | "packed" | "blas"
  std::string scheduling = "priority";  // "priority" | "fcfs"
  std::string max_batch_time = "auto";  // "auto" (measured at start) | milliseconds (0: none)
  QueryThresholds query;
};

// --max-batch-tokens, --max-batch-sequences, --max-queued-tokens, --pipeline-depth, --threads,
// --device, --cuda-graphs, --dtype, --int8-min-mean-cosine, --int8-min-cosine,
// --int8-serve-anyway, --int8-cache, --gemm, --scheduling, --max-batch-time, --query-max-inputs,
// --query-max-tokens.
void AddSchedulerFlags(CLI::App* cmd, SchedulerFlags* flags);
// --query-max-inputs, --query-max-tokens (also on `gateway`, which classes requests for its
// workers).
void AddQueryFlags(CLI::App* cmd, QueryThresholds* query);

// What `serve` and `gateway` share: the HTTP front's flags.
struct HttpFrontFlags {
  size_t max_body_bytes = size_t(8) << 20;
  int io_threads = 2;
  int tokenizer_threads = 2;
  double shutdown_grace_s = 20;
  std::optional<std::string> default_prompt;
  std::string api_key;
  bool auto_truncate = false;
  int64_t max_chunks_per_doc = 0;
  std::vector<std::string> cors_origins;
  ImageLimits image_limits;  // dual encoders' image inputs
};
// --max-body-bytes, --io-threads, --tokenizer-threads, --shutdown-grace, --default-prompt,
// --api-key (or ORCHID_API_KEY), --auto-truncate, --max-chunks-per-doc, --cors-allow-origin,
// --max-images, --max-image-bytes, --max-image-pixels, --image-fetch-hosts.
void AddHttpFrontFlags(CLI::App* cmd, HttpFrontFlags* flags);
// Copies the flags into the gateway's options, with the named prompts of `model_dir`'s
// config_sentence_transformers.json (none when model_dir is empty).
Status ApplyHttpFrontFlags(const HttpFrontFlags& flags, const std::string& model_dir,
                           GatewayOptions* options);

// A dual encoder's image preparer from `dir`'s image processor; nullopt for a model without a
// vision tower; an error when the directory has no processor config that fits the tower.
Result<std::optional<ImagePreparer>> ImagePreparerFor(const std::string& dir, const ModelInfo& info,
                                                      const ImageLimits& limits);

// One model of the HTTP front (`serve` or `gateway`): `dir`'s named prompts
// (config_sentence_transformers.json; none when dir is empty) and --default-prompt; for a model
// with a vision tower, `dir`'s image processor (preprocessor_config.json or
// processor_config.json), or an error when it has none that fits.
Result<GatewayModel> FrontModel(std::string name, const Tokenizer* tokenizer, EmbedBackend* backend,
                                const std::string& dir, const HttpFrontFlags& flags);

// A model loaded into a CPU engine with a scheduler in front: the worker half of serving.
struct ServingModel {
  rpc::WorkerModel model;  // name, info, max input, tokenizer fingerprint
  std::unique_ptr<Engine> engine;
  std::unique_ptr<TokenBudgetScheduler> scheduler;
};

// The tokenizer of a model directory (dir/tokenizer.json, or `path` when given), as the model's
// sentence-transformers files adjust it (sentence_bert_config.json do_lower_case).
Result<std::unique_ptr<Tokenizer>> LoadModelTokenizer(const std::string& dir,
                                                      const std::string& path = "");

// Loads `dir`, checks the flags against the model (the batch budget must hold the longest
// input), measures the batch-time target when --max-batch-time is auto (priority scheduling),
// starts the scheduler. `metrics` (optional) gets the scheduler's metrics; with
// `label_model` they carry a model="<name>" label (several models in one process).
Result<ServingModel> LoadServingModel(const std::string& dir, const std::string& served_name,
                                      const SchedulerFlags& flags, MetricsRegistry* metrics,
                                      bool label_model = false);

// Blocks SIGINT and SIGTERM in this thread (call before starting any thread, so every thread
// inherits the mask) and installs a handler that hands them to WaitForStopSignal(), so that
// neither kills the process, whichever thread (ours or a library's) the kernel delivers them to.
sigset_t BlockStopSignals();
// Waits for SIGINT or SIGTERM; returns its name.
const char* WaitForStopSignal(const sigset_t& signals);

}  // namespace orchid::cli
