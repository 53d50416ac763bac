// `orchid tokenize --tokenizer PATH [--no-special-tokens] [--max-length N]
//                  [--truncation-side right|left] [--offsets]`
// Reads one JSON string per line on stdin and writes the token ids of each as one JSON array
// per line on stdout (with --offsets, one object per line: {"ids": [...], "offsets":
// [[begin, end], ...]} with byte offsets into the UTF-8 input, [0, 0] for special tokens). Used to check exactness against the reference `tokenizers`.
// A line that is not a JSON string (or text the tokenizer rejects) is reported on stderr with
// its line number; the command then exits with status 1 (lines before it are still written).
#include <simdjson.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "tokenizer/tokenizer.h"

namespace orchid::cli {
namespace {

struct TokenizeOptions {
  std::string tokenizer_path;
  bool no_special_tokens = false;
  size_t max_length = 0;
  std::string truncation_side = "right";
  bool offsets = false;
};

void AppendIds(const Encoding& enc, std::string* out) {
  out->push_back('[');
  char buf[16];
  for (size_t i = 0; i < enc.ids.size(); ++i) {
    if (i > 0) out->push_back(',');
    const int n = std::snprintf(buf, sizeof(buf), "%d", enc.ids[i]);
    out->append(buf, static_cast<size_t>(n));
  }
  out->push_back(']');
}

void AppendOffsets(const Encoding& enc, std::string* out) {
  out->push_back('[');
  char buf[32];
  for (size_t i = 0; i < enc.offsets.size(); ++i) {
    const int n = std::snprintf(buf, sizeof(buf), "%s[%u,%u]", i > 0 ? "," : "", enc.offsets[i].first,
                                enc.offsets[i].second);
    out->append(buf, static_cast<size_t>(n));
  }
  out->push_back(']');
}

int RunTokenize(const TokenizeOptions& opt) {
  std::string path = opt.tokenizer_path;
  if (std::filesystem::is_directory(path)) path = (std::filesystem::path(path) / "tokenizer.json");
  auto loaded = Tokenizer::FromFile(path);
  if (!loaded.ok()) {
    std::fprintf(stderr, "orchid tokenize: %s\n", loaded.status().ToString().c_str());
    return 2;
  }
  const Tokenizer& tokenizer = **loaded;
  EncodeOptions options;
  options.add_special_tokens = !opt.no_special_tokens;
  options.max_length = opt.max_length;
  options.side = opt.truncation_side == "left" ? TruncationSide::kLeft : TruncationSide::kRight;

  std::ios::sync_with_stdio(false);
  simdjson::dom::parser parser;
  simdjson::padded_string padded;
  std::string line;
  std::string out;
  Encoding encoding;
  size_t line_no = 0;
  int rc = 0;
  while (std::getline(std::cin, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    padded = simdjson::padded_string(line);
    std::string_view text;
    simdjson::dom::element doc;
    auto err = parser.parse(padded).get(doc);
    if (err == simdjson::SUCCESS) err = doc.get(text);
    if (err != simdjson::SUCCESS) {
      std::fprintf(stderr, "orchid tokenize: line %zu: not a JSON string: %s\n", line_no,
                   simdjson::error_message(err));
      rc = 1;
      break;
    }
    const Status st = tokenizer.Encode(text, options, &encoding);
    if (!st.ok()) {
      std::fprintf(stderr, "orchid tokenize: line %zu: %s\n", line_no, st.ToString().c_str());
      rc = 1;
      break;
    }
    if (opt.offsets) {
      out.append("{\"ids\":");
      AppendIds(encoding, &out);
      out.append(",\"offsets\":");
      AppendOffsets(encoding, &out);
      out.append("}\n");
    } else {
      AppendIds(encoding, &out);
      out.push_back('\n');
    }
    if (out.size() >= (1u << 20)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  if (rc == 0 && std::cin.bad()) {
    std::fprintf(stderr, "orchid tokenize: error reading stdin\n");
    rc = 1;
  }
  return rc;
}

}  // namespace

void RegisterTokenizeCommand(CLI::App& app, int* exit_code) {
  auto opt = std::make_shared<TokenizeOptions>();
  auto* cmd = app.add_subcommand(
      "tokenize", "Tokenize JSON strings (one per line on stdin) into JSON arrays of ids");
  cmd->add_option("--tokenizer", opt->tokenizer_path, "tokenizer.json, or a model directory")
      ->required();
  cmd->add_flag("--no-special-tokens", opt->no_special_tokens,
                "do not add the post-processor's special tokens ([CLS] ... [SEP])");
  cmd->add_option("--max-length", opt->max_length,
                   "truncate to N tokens, special tokens included (0 = no truncation)");
  cmd->add_option("--truncation-side", opt->truncation_side, "right (default) or left")
      ->check(CLI::IsMember({"right", "left"}));
  cmd->add_flag("--offsets", opt->offsets,
                "write {\"ids\": [...], \"offsets\": [[begin, end], ...]} (byte offsets) per line");
  cmd->callback([opt, exit_code] { *exit_code = RunTokenize(*opt); });
}

}  // namespace orchid::cli
