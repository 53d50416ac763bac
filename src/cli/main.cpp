// The one `orchid` binary: `orchid serve`, `orchid tokenize`, ...
#include <CLI/CLI.hpp>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"orchid: embedding and reranking server"};
  app.require_subcommand(1);
  int exit_code = 0;
  orchid::cli::RegisterServeCommand(app, &exit_code);
  orchid::cli::RegisterTokenizeCommand(app, &exit_code);
  orchid::cli::RegisterWorkerCommand(app, &exit_code);
  orchid::cli::RegisterGatewayCommand(app, &exit_code);
  orchid::cli::RegisterBenchCommand(app, &exit_code);
  orchid::cli::RegisterEmbedCommand(app, &exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
