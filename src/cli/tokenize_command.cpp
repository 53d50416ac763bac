// `orchid tokenize --tokenizer PATH [--no-special-tokens] [--max-length N] [--no-truncation]
//                  [--truncation-side right|left] [--offsets] [--pair]
//                  [--truncation-strategy longest_first|only_first|only_second] [--type-ids]`
// Reads one JSON string per line on stdin and writes the token ids of each as one JSON array
// per line on stdout (with --offsets, one object per line: {"ids": [...], "offsets":
// [[begin, end], ...]} with byte offsets into the UTF-8 input, [0, 0] for special tokens).
// With --pair each line is a JSON array of two strings ["first", "second"], encoded as a pair
// with the post-processor's pair template; --type-ids adds "type_ids": [...] to the object.
// With --decode each line is instead a JSON array of ids, written back as one JSON string per
// line (the tokenizer's decoder; --skip-special-tokens drops special added tokens).
// Used to check exactness against the reference `tokenizers`.
// A line that is not a JSON string (or text the tokenizer rejects) is reported on stderr with
// its line number; the command then exits with status 1 (lines before it are still written).
#include <simdjson.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "description/registry.h"
#include "gateway/json_writer.h"
#include "tokenizer/tokenizer.h"

namespace orchid::cli {
namespace {

struct TokenizeOptions {
  std::string tokenizer_path;
  bool no_special_tokens = false;
  size_t max_length = 0;
  std::string truncation_side = "right";
  bool offsets = false;
  bool pair = false;
  bool type_ids = false;
  std::string truncation_strategy = "longest_first";
  bool decode = false;
  bool skip_special_tokens = false;
  bool no_truncation = false;
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

void AppendTypeIds(const Encoding& enc, std::string* out) {
  out->push_back('[');
  for (size_t i = 0; i < enc.type_ids.size(); ++i) {
    if (i > 0) out->push_back(',');
    out->append(std::to_string(enc.type_ids[i]));
  }
  out->push_back(']');
}

void AppendOffsets(const Encoding& enc, std::string* out) {
  out->push_back('[');
  char buf[32];
  for (size_t i = 0; i < enc.offsets.size(); ++i) {
    const int n = std::snprintf(buf, sizeof(buf), "%s[%u,%u]", i > 0 ? "," : "",
                                enc.offsets[i].first, enc.offsets[i].second);
    out->append(buf, static_cast<size_t>(n));
  }
  out->push_back(']');
}

int RunTokenize(const TokenizeOptions& opt) {
  std::string path = opt.tokenizer_path;
  if (std::filesystem::is_directory(path)) path = TokenizerPath(path);  // or SigLIP's spiece.model
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
  options.strategy = opt.truncation_strategy == "only_first"    ? TruncationStrategy::kOnlyFirst
                     : opt.truncation_strategy == "only_second" ? TruncationStrategy::kOnlySecond
                                                                : TruncationStrategy::kLongestFirst;
  // Without --max-length, the truncation section of tokenizer.json applies, as Hugging Face
  // `tokenizers` does when it loads the file (all-MiniLM-L6-v2's cuts at 128 tokens).
  if (opt.max_length == 0 && !opt.no_truncation) {
    if (std::optional<EncodeOptions> file = tokenizer.FileTruncation()) {
      options.max_length = file->max_length;
      options.side = file->side;
      options.strategy = file->strategy;
    }
  }

  std::ios::sync_with_stdio(false);
  simdjson::dom::parser parser;
  simdjson::padded_string padded;
  std::string line;
  std::string out;
  Encoding encoding;
  std::vector<int32_t> ids;
  std::string decoded;
  size_t line_no = 0;
  int rc = 0;
  while (std::getline(std::cin, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    padded = simdjson::padded_string(line);
    std::string_view text, second;
    simdjson::dom::element doc;
    auto err = parser.parse(padded).get(doc);
    if (opt.decode) {
      simdjson::dom::array arr;
      if (err == simdjson::SUCCESS) err = doc.get(arr);
      ids.clear();
      if (err == simdjson::SUCCESS) {
        for (simdjson::dom::element v : arr) {
          int64_t id = 0;
          err = v.get(id);
          if (err != simdjson::SUCCESS) break;
          if (id < 0 || id > 0x7FFFFFFF) {
            err = simdjson::NUMBER_OUT_OF_RANGE;
            break;
          }
          ids.push_back(static_cast<int32_t>(id));
        }
      }
      if (err != simdjson::SUCCESS) {
        std::fprintf(stderr, "orchid tokenize: line %zu: not a JSON array of ids: %s\n", line_no,
                     simdjson::error_message(err));
        rc = 1;
        break;
      }
      const Status st = tokenizer.Decode(ids, opt.skip_special_tokens, &decoded);
      if (!st.ok()) {
        std::fprintf(stderr, "orchid tokenize: line %zu: %s\n", line_no, st.ToString().c_str());
        rc = 1;
        break;
      }
      JsonWriter(&out).String(decoded);
      out.push_back('\n');
      if (out.size() >= (1u << 20)) {
        std::fwrite(out.data(), 1, out.size(), stdout);
        out.clear();
      }
      continue;
    }
    if (opt.pair) {
      simdjson::dom::array arr;
      if (err == simdjson::SUCCESS) err = doc.get(arr);
      if (err == simdjson::SUCCESS && arr.size() != 2) err = simdjson::INCORRECT_TYPE;
      if (err == simdjson::SUCCESS) err = arr.at(0).get(text);
      if (err == simdjson::SUCCESS) err = arr.at(1).get(second);
    } else if (err == simdjson::SUCCESS) {
      err = doc.get(text);
    }
    if (err != simdjson::SUCCESS) {
      std::fprintf(stderr, "orchid tokenize: line %zu: not a JSON %s: %s\n", line_no,
                   opt.pair ? "array of two strings" : "string", simdjson::error_message(err));
      rc = 1;
      break;
    }
    const Status st = opt.pair ? tokenizer.EncodePair(text, second, options, &encoding)
                               : tokenizer.Encode(text, options, &encoding);
    if (!st.ok()) {
      std::fprintf(stderr, "orchid tokenize: line %zu: %s\n", line_no, st.ToString().c_str());
      rc = 1;
      break;
    }
    if (opt.offsets || opt.type_ids) {
      out.append("{\"ids\":");
      AppendIds(encoding, &out);
      if (opt.type_ids) {
        out.append(",\"type_ids\":");
        AppendTypeIds(encoding, &out);
      }
      if (opt.offsets) {
        out.append(",\"offsets\":");
        AppendOffsets(encoding, &out);
      }
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
                  "truncate to N tokens, special tokens included (default: the truncation "
                  "section of tokenizer.json, if any; see --no-truncation)");
  cmd->add_option("--truncation-side", opt->truncation_side, "right (default) or left")
      ->check(CLI::IsMember({"right", "left"}));
  cmd->add_flag("--offsets", opt->offsets,
                "write {\"ids\": [...], \"offsets\": [[begin, end], ...]} (byte offsets) per line");
  cmd->add_flag("--pair", opt->pair,
                "each stdin line is a JSON array of two strings [\"first\", \"second\"], encoded "
                "as a pair with the post-processor's pair template");
  cmd->add_option("--truncation-strategy", opt->truncation_strategy,
                  "for --pair: longest_first (default), only_first or only_second")
      ->check(CLI::IsMember({"longest_first", "only_first", "only_second"}));
  cmd->add_flag("--type-ids", opt->type_ids,
                "write {\"ids\": [...], \"type_ids\": [...]} per line (with --offsets, also "
                "\"offsets\")");
  cmd->add_flag("--decode", opt->decode,
                "decode instead: each stdin line is a JSON array of ids, written back as a JSON "
                "string per line");
  cmd->add_flag("--no-truncation", opt->no_truncation,
                "ignore tokenizer.json's truncation section (applied when --max-length is not "
                "given, as Hugging Face tokenizers does)");
  cmd->add_flag("--skip-special-tokens", opt->skip_special_tokens,
                "for --decode: drop special added tokens ([CLS], <s>, ...)");
  cmd->callback([opt, exit_code] { *exit_code = RunTokenize(*opt); });
}

}  // namespace orchid::cli
