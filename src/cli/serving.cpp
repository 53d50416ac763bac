#include "cli/serving.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "runtime/cpu_engine.h"
#include "runtime/int8_cache.h"
#if ORCHID_HAVE_CUDA
#include "runtime/cuda/cuda_engine.h"
#endif
#include "description/registry.h"
#include "description/sentence_transformers.h"
#include "description/static_embedding.h"
#include "gateway/late_interaction.h"
#include "image/processor_config.h"
#include "tokenizer/static_input.h"
#include "worker/batch_calibration.h"

namespace orchid::cli {

std::string DefaultModelName(const std::string& dir) {
  std::filesystem::path p = std::filesystem::absolute(dir).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  return p.filename().string();
}

ModelSpec ParseModelSpec(const std::string& s) {
  const size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || std::filesystem::is_directory(s)) return {"", s};
  return {s.substr(0, eq), s.substr(eq + 1)};
}

bool ParseHostPort(const std::string& s, std::string* host, uint16_t* port) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= s.size()) return false;
  std::string h = s.substr(0, colon);
  if (h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  unsigned long p = 0;
  for (size_t i = colon + 1; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    p = p * 10 + unsigned(s[i] - '0');
    if (p > 65535) return false;
  }
  *host = h;
  *port = uint16_t(p);
  return !h.empty();
}

void AddSchedulerFlags(CLI::App* cmd, SchedulerFlags* f) {
  cmd->add_option("--max-batch-tokens", f->max_batch_tokens,
                  "token budget of one engine batch (at least the model's maximum input)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-batch-sequences", f->max_batch_sequences,
                  "sequences per engine batch (0: limited by tokens only)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-queued-tokens", f->max_queued_tokens,
                  "tokens allowed to wait for a batch; beyond, requests are refused for load")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--pipeline-depth", f->pipeline_depth,
                  "batches on the engine at once (the next is built while one runs)")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
  cmd->add_option("--threads", f->threads, "engine compute threads (0: all cores)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--device", f->device, "where the engine runs: cpu or cuda (GPU 0)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--cuda-graphs", f->cuda_graphs,
                  "CUDA graphs: off, lazy (capture a bucket on its second sight) or "
                  "eager-capture-all")
      ->capture_default_str()
      ->check(CLI::IsMember({"off", "lazy", "eager-capture-all"}));
  cmd->add_option("--dtype", f->dtype,
                  "CPU engine: float32 (default), or bfloat16 linear layers (weights and their "
                  "inputs rounded to bfloat16, fp32 accumulation: half the weight memory, about "
                  "float32's speed with AVX2 or AVX-512), or int8 (weights per output channel, "
                  "inputs per token, on oneDNN's int8 matmul; calibrated and checked against "
                  "float32 at start-up, see --int8-min-mean-cosine). The CUDA engine runs "
                  "bfloat16 only.")
      ->check(CLI::IsMember({"float32", "bfloat16", "fp32", "bf16", "int8"}));
  cmd->add_option("--int8-min-mean-cosine", f->int8_min_mean_cosine,
                  "--dtype int8: at start-up the model embeds built-in texts in float32 and in "
                  "int8; it refuses to start when the mean cosine between the two is below this")
      ->capture_default_str()
      ->check(CLI::Range(-1.0, 1.0));
  cmd->add_option("--int8-min-cosine", f->int8_min_cosine,
                  "--dtype int8: ... or when the smallest cosine is below this")
      ->capture_default_str()
      ->check(CLI::Range(-1.0, 1.0));
  cmd->add_flag("--int8-serve-anyway", f->int8_serve_anyway,
                "--dtype int8: serve even when the start-up check is below the thresholds (the "
                "measured fidelity is still logged and reported by /info)");
  cmd->add_option("--int8-cache", f->int8_cache,
                  "--dtype int8: where the start-up check's results are kept, to be read back "
                  "at the next start instead of running it again when orchid's binary, the "
                  "model's files and the CPU's kernel paths are the same; auto: "
                  "$XDG_CACHE_HOME/orchid or ~/.cache/orchid; off: run the check every time")
      ->capture_default_str();
  cmd->add_option("--gemm", f->gemm,
                  "CPU engine, float32 products: packed (orchid's AVX2/AVX-512 kernel on "
                  "weights packed at load), blas (OpenBLAS cblas_sgemm for the linear layers "
                  "and attention, pieces spread over the engine threads), or auto (default: "
                  "packed where the CPU has AVX2 or AVX-512, else blas)")
      ->check(CLI::IsMember({"auto", "packed", "blas"}));
  cmd->add_option("--scheduling", f->scheduling,
                  "priority: queries (small requests, or input_type query) go ahead of bulk "
                  "work, vLLM's `priority` field orders requests (lower first), bulk requests "
                  "share the engine by tokens, and bulk batches are sized to --max-batch-time; "
                  "fcfs: sequences in arrival order in batches of --max-batch-tokens (the old "
                  "behaviour)")
      ->capture_default_str()
      ->check(CLI::IsMember({"priority", "fcfs"}));
  cmd->add_option("--max-batch-time", f->max_batch_time,
                  "milliseconds a batch of bulk work should take on the engine, so that a query "
                  "waits about that long behind bulk work (priority scheduling); auto: twice the "
                  "time of the smallest batch that reaches 95% of the engine's measured peak "
                  "rate, at most 50 ms (measured at start); 0: no bound (batches up to "
                  "--max-batch-tokens)")
      ->capture_default_str()
      ->check([](const std::string& v) -> std::string {
        if (v == "auto") return "";
        try {
          size_t used = 0;
          const double ms = std::stod(v, &used);
          if (used == v.size() && ms >= 0 && ms <= 3.6e6) return "";
        } catch (const std::exception&) {
        }
        return "must be auto or a number of milliseconds (0 to 3600000)";
      });
  AddQueryFlags(cmd, &f->query);
}

void AddQueryFlags(CLI::App* cmd, QueryThresholds* q) {
  cmd->add_option("--query-max-inputs", q->max_inputs,
                  "a request with at most this many inputs (and --query-max-tokens tokens) is a "
                  "query: it goes ahead of bulk work of its priority")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--query-max-tokens", q->max_tokens,
                  "a request with at most this many tokens (and --query-max-inputs inputs) is a "
                  "query")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

void AddHttpFrontFlags(CLI::App* cmd, HttpFrontFlags* f) {
  cmd->add_option("--max-body-bytes", f->max_body_bytes, "largest request body (413 above)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--io-threads", f->io_threads, "HTTP io threads")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--tokenizer-threads", f->tokenizer_threads,
                  "threads that parse, tokenize and format replies")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--shutdown-grace", f->shutdown_grace_s,
                  "seconds that requests in progress get to finish on SIGINT/SIGTERM")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--default-prompt", f->default_prompt,
                  "text put before every input that names no prompt_name / input_type "
                  "(default: the model's default_prompt_name, if any)");
  cmd->add_option(
         "--api-key", f->api_key,
         "require `Authorization: Bearer KEY` on every route but /health, /metrics and "
         "/openapi.json (401 otherwise); prefer the environment variable, which `ps` does not show")
      ->envname("ORCHID_API_KEY");
  cmd->add_flag("--auto-truncate", f->auto_truncate,
                "cut inputs over the model's maximum length (as a request's `truncate: true` "
                "does) unless the request says `truncate: false`; without it, such inputs are "
                "refused unless the request asks for truncation (/v1/rerank always truncates "
                "unless told not to)");
  cmd->add_option("--max-images", f->image_limits.max_images,
                  "dual encoders (CLIP, SigLIP): the most images one request may hold")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-image-bytes", f->image_limits.max_encoded_bytes,
                  "dual encoders: the largest encoded image (after base64) taken")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--image-fetch-hosts", f->image_limits.fetch_hosts,
                  "dual encoders: hosts (or host:port) whose http(s) image URLs the server may "
                  "fetch (no redirects followed, https verified); default none: URLs are "
                  "refused with a 400, as a server that fetches any URL is an SSRF hole")
      ->delimiter(',');
  cmd->add_option("--max-image-pixels", f->image_limits.max_pixels,
                  "dual encoders: the most pixels (width x height, read from the header before "
                  "decoding) an image may have")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option(
         "--max-chunks-per-doc", f->max_chunks_per_doc,
         "rerank documents longer than the model's window as up to N overlapping chunks "
         "beside the query, each scored alone, the best chunk's score the document's "
         "(for rerank requests that do not say `max_chunks_per_doc`); 0: off, cut or refuse "
         "them as `truncate` says")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--cors-allow-origin", f->cors_origins,
                  "a browser origin (e.g. https://app.example.com) whose pages may call the API "
                  "(CORS); repeat for several, or * for any. Default: none")
      ->delimiter(',');
}

Status ApplyHttpFrontFlags(const HttpFrontFlags& f, const std::string& model_dir,
                           GatewayOptions* o) {
  o->io_threads = f.io_threads;
  o->worker_threads = f.tokenizer_threads;
  o->max_body_bytes = f.max_body_bytes;
  o->shutdown_grace = std::chrono::milliseconds(int64_t(f.shutdown_grace_s * 1000));
  o->default_prompt = f.default_prompt;
  o->api_key = f.api_key;
  o->auto_truncate = f.auto_truncate;
  o->max_chunks_per_doc = f.max_chunks_per_doc;
  o->cors_origins = f.cors_origins;
  if (!model_dir.empty()) {
    ORCHID_ASSIGN_OR_RETURN(o->prompts, ReadEncodeConfig(model_dir));
  }
  return Status::Ok();
}

Result<std::optional<ImagePreparer>> ImagePreparerFor(const std::string& dir, const ModelInfo& info,
                                                      const ImageLimits& limits) {
  if (!info.image.enabled()) return std::optional<ImagePreparer>();
  ORCHID_ASSIGN_OR_RETURN(image::ImageProcessorConfig config, image::LoadImageProcessorConfig(dir));
  Result<ImagePreparer> preparer = ImagePreparer::Create(config, info.image, limits);
  if (!preparer.ok()) return Status::InvalidArgument(dir + ": " + preparer.status().message());
  return std::optional<ImagePreparer>(std::move(preparer).value());
}

Result<GatewayModel> FrontModel(std::string name, const Tokenizer* tokenizer, EmbedBackend* backend,
                                const std::string& dir, const HttpFrontFlags& flags) {
  GatewayModel m;
  // A ColBERT model whose markers or mask token its tokenizer lacks is refused at start-up.
  if (const LateInteraction& li = backend->model_info().late_interaction; li.enabled) {
    Result<LateInteractionEncoder> late = LateInteractionEncoder::Make(li, *tokenizer);
    if (!late.ok()) return Status::InvalidArgument(name + ": " + late.status().message());
  }
  m.name = std::move(name);
  m.tokenizer = tokenizer;
  m.backend = backend;
  if (!dir.empty()) {
    ORCHID_ASSIGN_OR_RETURN(m.prompts, ReadEncodeConfig(dir));
    ORCHID_ASSIGN_OR_RETURN(std::optional<StaticEmbeddingConfig> static_model,
                            ReadStaticEmbedding(dir));
    m.empty_text_is_zero = static_model.has_value();
  }
  if (const ImageInput& image = backend->model_info().image; image.enabled()) {
    if (dir.empty()) {
      spdlog::warn("{}: no model directory here, so no image processor: images are refused",
                   m.name);
    } else {
      ORCHID_ASSIGN_OR_RETURN(m.images,
                              ImagePreparerFor(dir, backend->model_info(), flags.image_limits));
    }
  }
  m.default_prompt = flags.default_prompt;
  return m;
}

Result<std::unique_ptr<Tokenizer>> LoadModelTokenizer(const std::string& dir,
                                                      const std::string& path) {
  TokenizerOptions options;
  std::optional<StaticEmbeddingConfig> static_model;
  if (!dir.empty()) {
    ORCHID_ASSIGN_OR_RETURN(SentenceTransformersConfig st, ReadSentenceTransformersConfig(dir));
    options.lowercase = st.present && st.do_lower_case;
    if (options.lowercase) spdlog::info("{}: texts are lowercased (do_lower_case)", dir);
    ORCHID_ASSIGN_OR_RETURN(static_model, ReadStaticEmbedding(dir));
  }
  ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer,
                          Tokenizer::FromFile(path.empty() ? TokenizerPath(dir) : path, options));
  if (!static_model) return tokenizer;
  // A static model averages the ids its encode rules leave (description/static_embedding.h).
  StaticInputRules rules;
  rules.max_chars = static_model->max_chars;
  rules.drop_token = static_model->drop_token;
  return WithStaticInputRules(std::move(tokenizer), rules);
}

Result<ServingModel> LoadServingModel(const std::string& dir, const std::string& served_name,
                                      const SchedulerFlags& flags, MetricsRegistry* metrics,
                                      bool label_model) {
  ServingModel out;
  out.model.name = served_name.empty() ? DefaultModelName(dir) : served_name;
  if (flags.max_queued_tokens < flags.max_batch_tokens) {
    return Status::InvalidArgument(
        "--max-queued-tokens " + std::to_string(flags.max_queued_tokens) +
        " is smaller than --max-batch-tokens " + std::to_string(flags.max_batch_tokens));
  }
  WeightType dtype = WeightType::kFloat32;
  std::string why_not;
  if (!ResolveWeightType(flags.dtype, flags.gemm, &dtype, &why_not)) {
    return Status::InvalidArgument(why_not);
  }
  if (flags.device == "cuda" && !flags.dtype.empty() && dtype != WeightType::kBfloat16) {
    return Status::InvalidArgument("--dtype " + flags.dtype +
                                   " with --device cuda: the CUDA engine runs bfloat16 only");
  }
  if (flags.device == "cuda" && !flags.gemm.empty()) {
    return Status::InvalidArgument("--gemm is for the CPU engine; the CUDA engine uses cuBLASLt");
  }
  if (flags.device == "cuda") {
#if ORCHID_HAVE_CUDA
    std::string why;
    if (!cuda::CudaDeviceAvailable(&why)) return Status::Unavailable("--device cuda: " + why);
    cuda::CudaEngineOptions co;
    ORCHID_ASSIGN_OR_RETURN(co.graphs, cuda::ParseCudaGraphs(flags.cuda_graphs));
    co.max_batch_tokens = flags.max_batch_tokens;
    if (flags.max_batch_sequences > 0) co.max_batch_sequences = flags.max_batch_sequences;
    auto engine = cuda::MakeCudaEngine(dir, co);
    if (!engine.ok()) {
      return Status(engine.status().code(), "cannot load model: " + engine.status().message());
    }
    out.engine = std::move(*engine);
#else
    return Status::Unimplemented("--device cuda: this build has no CUDA backend (ORCHID_CUDA off)");
#endif
  } else if (flags.device == "cpu") {
    LoadOptions lo;
    lo.linear_weights = dtype;
    lo.num_threads = flags.threads;
    std::unique_ptr<Tokenizer> sample_tokenizer;  // encodes int8's built-in texts
    auto log_notes = [](const std::vector<KernelNote>& notes) {
      for (const KernelNote& n : notes) {
        if (n.warning) {
          spdlog::warn("{}", n.text);
        } else {
          spdlog::info("{}", n.text);
        }
      }
    };
    log_notes(CpuKernelNotes(lo.linear_weights, false));
    if (lo.linear_weights == WeightType::kInt8) {
      auto tok = LoadModelTokenizer(dir, "");
      if (!tok.ok()) {
        return Status(tok.status().code(),
                      "--dtype int8 needs the model's tokenizer: " + tok.status().message());
      }
      sample_tokenizer = std::move(*tok);
      lo.int8.tokenizer = sample_tokenizer.get();
      lo.int8.min_mean_cosine = flags.int8_min_mean_cosine;
      lo.int8.min_cosine = flags.int8_min_cosine;
      lo.int8.serve_anyway = flags.int8_serve_anyway;
      lo.int8.cache_dir = flags.int8_cache == "auto"  ? DefaultInt8CacheDir()
                          : flags.int8_cache == "off" ? ""
                                                      : flags.int8_cache;
    }
    auto model = LoadModel(dir, lo);
    if (!model.ok()) {
      return Status(model.status().code(), "cannot load model: " + model.status().message());
    }
    log_notes(CpuKernelNotes(lo.linear_weights, true));
    if (const ModelInfo::Fidelity& f = (*model)->info().fidelity; f.samples > 0) {
      const bool below =
          f.mean_cosine < flags.int8_min_mean_cosine || f.min_cosine < flags.int8_min_cosine;
      const std::string what = fmt::format(
          "{}: --dtype int8 against float32 on {} built-in texts: mean cosine {:.6f}, minimum "
          "{:.6f} ({})",
          dir, f.samples, f.mean_cosine, f.min_cosine, f.source);
      if (below) {
        spdlog::warn("{} (below the thresholds; served because of --int8-serve-anyway)", what);
      } else {
        spdlog::info("{}", what);
      }
    }
    out.engine = MakeCpuEngine(std::move(*model), CpuEngineOptions{flags.threads});
  } else {
    return Status::InvalidArgument("--device must be cpu or cuda, not " + flags.device);
  }
  out.model.info = out.engine->info();
  ModelInfo& info = out.model.info;
  for (const ModelInfo::EngineFact& f : info.engine_facts) {
    spdlog::info("{}: {}: {}", out.model.name, f.name, f.value);
  }
  if (info.dtype.empty()) info.dtype = flags.device == "cuda" ? "bfloat16" : "float32";
  out.model.max_input_tokens =
      info.max_seq_length > 0 ? info.max_seq_length : info.max_position_embeddings;
  if (auto fp = rpc::FingerprintFile(TokenizerPath(dir)); fp.ok()) {
    out.model.tokenizer_fingerprint = *fp;
  }
  if (flags.max_batch_tokens < out.model.max_input_tokens) {
    // As text-embeddings-inference does: long-context models (Qwen3: 32k-40k positions) are
    // served with inputs capped at the batch budget rather than refused.
    spdlog::warn("{}: inputs are limited to --max-batch-tokens = {} tokens (the model accepts {})",
                 out.model.name, flags.max_batch_tokens, out.model.max_input_tokens);
    info.max_seq_length_source = "--max-batch-tokens (the model takes " +
                                 std::to_string(out.model.max_input_tokens) +
                                 " tokens: " + info.max_seq_length_source + ")";
    out.model.max_input_tokens = flags.max_batch_tokens;
    info.max_seq_length = flags.max_batch_tokens;
  }
  spdlog::info("{}: maximum input length {} tokens ({})", out.model.name,
               out.model.max_input_tokens, info.max_seq_length_source);
  if (!info.tasks.empty()) {
    std::string tasks;
    for (const std::string& t : info.tasks) tasks += (tasks.empty() ? "" : ", ") + t;
    spdlog::info("{}: task adapters (a request's `task`): {}", out.model.name, tasks);
  }
  TokenBudgetSchedulerOptions so;
  so.max_batch_tokens = flags.max_batch_tokens;
  so.max_batch_sequences = flags.max_batch_sequences;
  so.max_queued_tokens = flags.max_queued_tokens;
  so.max_batches_in_flight = std::max(1, flags.pipeline_depth);
  so.query = flags.query;
  so.policy = flags.scheduling == "fcfs" ? SchedulingPolicy::kFcfs : SchedulingPolicy::kPriority;
  if (so.policy == SchedulingPolicy::kPriority) {
    if (flags.max_batch_time == "auto") {
      BatchCalibrationOptions co;
      co.max_batch_tokens = flags.max_batch_tokens;
      auto calibration = CalibrateBatchTime(out.engine.get(), co);
      if (!calibration.ok()) {
        return Status(
            calibration.status().code(),
            "cannot run the model (measuring its batch time): " + calibration.status().message());
      }
      so.max_batch_time = calibration->max_batch_time;
      so.initial_seconds_per_token = calibration->seconds_per_token;
      spdlog::info("{}: {}", out.model.name, calibration->Describe());
    } else {
      so.max_batch_time =
          std::chrono::microseconds(int64_t(std::stod(flags.max_batch_time) * 1000));
    }
  }
  MetricLabels labels;
  if (label_model) labels.emplace_back("model", out.model.name);
  if (metrics != nullptr) so.metrics = RegisterSchedulerMetrics(metrics, labels);
  out.scheduler = std::make_unique<TokenBudgetScheduler>(out.engine.get(), so);
  if (metrics != nullptr) out.scheduler->ExportGauges(metrics, labels);
  return out;
}

namespace {

// The write end of the pipe the stop-signal handler writes the signal's number into.
int stop_pipe_read = -1;
int stop_pipe_write = -1;

extern "C" void OnStopSignal(int sig) {
  const int saved = errno;
  const unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] const ssize_t n = write(stop_pipe_write, &b, 1);
  errno = saved;
}

}  // namespace

// Threads that a library starts before main() (OpenBLAS starts its pool when it is loaded) do not
// inherit the mask below, so a process-directed SIGTERM may be delivered to one of them; with the
// default disposition that terminates the process without draining. A handler makes delivery to
// any thread safe: it only writes the signal's number into a pipe that WaitForStopSignal() reads.
sigset_t BlockStopSignals() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  if (stop_pipe_write < 0) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) == 0) {
      stop_pipe_read = fds[0];
      stop_pipe_write = fds[1];
      struct sigaction sa {};
      sa.sa_handler = OnStopSignal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      sigaction(SIGINT, &sa, nullptr);
      sigaction(SIGTERM, &sa, nullptr);
    }
  }
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
  return s;
}

const char* WaitForStopSignal(const sigset_t& signals) {
  int sig = 0;
  if (stop_pipe_read < 0) {  // no pipe (pipe2 failed): the signals are blocked, wait for them
    sigwait(&signals, &sig);
  } else {
    // Unblocked here so that the signal always has a thread to go to; whichever thread gets it,
    // the handler writes its number into the pipe.
    pthread_sigmask(SIG_UNBLOCK, &signals, nullptr);
    unsigned char b = 0;
    while (read(stop_pipe_read, &b, 1) != 1) {
    }
    sig = b;
  }
  return sig == SIGINT ? "SIGINT" : "SIGTERM";
}

}  // namespace orchid::cli
