// `orchid serve --model DIR`: gateway and worker in one process — the HTTP API in front of a
// TokenBudgetScheduler in front of a CPU engine. Runs until SIGINT or SIGTERM.
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "cli/commands.h"
#include "engine/cpu/cpu_engine.h"
#include "gateway/gateway.h"
#include "models/model_loader.h"
#include "tokenizer/tokenizer.h"
#include "worker/token_budget_scheduler.h"

namespace orchid::cli {
namespace {

struct ServeOptions {
  std::string model_dir;
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  std::string served_model_name;
  int max_batch_tokens = 16384;
  int64_t max_queued_tokens = 1 << 20;
  size_t max_body_bytes = size_t(8) << 20;
  int threads = 0;
  int io_threads = 2;
  int tokenizer_threads = 2;
  double shutdown_grace_s = 20;
};

// "models/all-MiniLM-L6-v2/" → "all-MiniLM-L6-v2"; "." → the current directory's name.
std::string DefaultModelName(const std::string& dir) {
  std::filesystem::path p = std::filesystem::absolute(dir).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  return p.filename().string();
}

int RunServe(const ServeOptions& o) {
  // Block the stop signals before any thread starts, so every thread inherits the mask and
  // this thread alone receives them, through sigwait().
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto model = LoadModel(o.model_dir);
  if (!model.ok()) {
    spdlog::error("cannot load model: {}", model.status().ToString());
    return 1;
  }
  auto tokenizer = Tokenizer::FromFile(TokenizerPath(o.model_dir));
  if (!tokenizer.ok()) {
    spdlog::error("cannot load tokenizer: {}", tokenizer.status().ToString());
    return 1;
  }
  const ModelInfo info = (*model)->info();
  const int max_len = info.max_seq_length > 0 ? info.max_seq_length : info.max_position_embeddings;
  if (o.max_batch_tokens < max_len) {
    spdlog::error("--max-batch-tokens {} is smaller than the model's maximum input of {} tokens",
                  o.max_batch_tokens, max_len);
    return 2;
  }
  if (o.max_queued_tokens < o.max_batch_tokens) {
    spdlog::error("--max-queued-tokens {} is smaller than --max-batch-tokens {}",
                  o.max_queued_tokens, o.max_batch_tokens);
    return 2;
  }

  std::unique_ptr<Engine> engine = MakeCpuEngine(std::move(*model), CpuEngineOptions{o.threads});
  TokenBudgetSchedulerOptions sched_options;
  sched_options.max_batch_tokens = o.max_batch_tokens;
  sched_options.max_queued_tokens = o.max_queued_tokens;
  TokenBudgetScheduler scheduler(engine.get(), sched_options);

  GatewayOptions gw;
  gw.host = o.host;
  gw.port = o.port;
  gw.served_model_name =
      o.served_model_name.empty() ? DefaultModelName(o.model_dir) : o.served_model_name;
  gw.io_threads = o.io_threads;
  gw.worker_threads = o.tokenizer_threads;
  gw.max_body_bytes = o.max_body_bytes;
  gw.shutdown_grace = std::chrono::milliseconds(int64_t(o.shutdown_grace_s * 1000));
  Gateway gateway(tokenizer->get(), &scheduler, gw);
  if (Status st = gateway.Start(); !st.ok()) {
    spdlog::error("{}", st.ToString());
    scheduler.Shutdown();
    return 1;
  }
  const bool v6 = o.host.find(':') != std::string::npos;
  spdlog::info("orchid serving {} ({}, dim {}, max {} tokens, {} pooling{}) on http://{}{}{}:{}",
               gw.served_model_name, info.architecture, info.hidden_size, max_len,
               PoolingName(info.default_pooling), info.default_normalize ? ", normalized" : "",
               v6 ? "[" : "", o.host, v6 ? "]" : "", gateway.port());

  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("received {}, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
  gateway.Stop();  // drains the scheduler too
  spdlog::info("stopped");
  return 0;
}

}  // namespace

void RegisterServeCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<ServeOptions>();
  auto* cmd = app.add_subcommand(
      "serve", "Serve a model over HTTP: OpenAI POST /v1/embeddings, TEI POST /embed");
  cmd->add_option("--model", opts->model_dir, "Hugging Face model directory")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--host", opts->host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", opts->port, "port to listen on (0: any free port)")
      ->capture_default_str();
  cmd->add_option("--served-model-name", opts->served_model_name,
                  "model name in the API (default: the model directory's name)");
  cmd->add_option("--max-batch-tokens", opts->max_batch_tokens, "token budget of one batch")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-queued-tokens", opts->max_queued_tokens,
                  "tokens allowed to wait for a batch; beyond, requests get 429")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-body-bytes", opts->max_body_bytes, "largest request body (413 above)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--threads", opts->threads, "engine compute threads (0: all cores)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--io-threads", opts->io_threads, "HTTP io threads")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--tokenizer-threads", opts->tokenizer_threads,
                  "threads that parse, tokenize and format replies")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--shutdown-grace", opts->shutdown_grace_s,
                  "seconds that requests in progress get to finish on SIGINT/SIGTERM")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->callback([opts, exit_code] { *exit_code = RunServe(*opts); });
}

}  // namespace orchid::cli
