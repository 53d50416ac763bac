// Placeholder until the subcommand lands.
#include <cstdio>

#include "cli/commands.h"

namespace orchid::cli {

void RegisterTokenizeCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("tokenize", "not yet implemented");
  cmd->callback([exit_code] {
    std::fprintf(stderr, "not yet implemented\n");
    *exit_code = 2;
  });
}

}  // namespace orchid::cli
