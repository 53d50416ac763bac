// Each `orchid` subcommand lives in its own file and registers itself here.
// Register*Command adds the subcommand and its options to `app` and sets its callback; the
// callback's exit code is stored into *exit_code.
#pragma once

#include <CLI/CLI.hpp>

namespace orchid::cli {

void RegisterServeCommand(CLI::App& app, int* exit_code);
void RegisterTokenizeCommand(CLI::App& app, int* exit_code);
void RegisterWorkerCommand(CLI::App& app, int* exit_code);
void RegisterGatewayCommand(CLI::App& app, int* exit_code);
void RegisterBenchCommand(CLI::App& app, int* exit_code);
void RegisterEmbedCommand(CLI::App& app, int* exit_code);

}  // namespace orchid::cli
