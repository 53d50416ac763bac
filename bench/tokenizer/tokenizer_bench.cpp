// orchid_tokenizer_bench TOKENIZER_JSON REPS INPUTS...
//
// Times Tokenizer::Encode directly (no JSON, no process boundary), single-threaded, for
// bench/tokenizer/bench.py. Each INPUTS file holds texts as (u32 little-endian length, bytes)
// records. After one untimed warm-up pass, every text is encoded REPS times, each call timed on
// its own, reusing one Encoding (the server's steady state: no allocation per call). Prints one
// JSON object per file: inputs, calls, tokens (per pass, special tokens included), p50_us,
// p99_us, mean_us, tokens_per_s.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace {

std::vector<std::string> ReadInputs(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path);
    std::exit(1);
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> texts;
  size_t pos = 0;
  while (pos + 4 <= bytes.size()) {
    uint32_t n = 0;
    for (int i = 3; i >= 0; --i)
      n = (n << 8) | static_cast<uint8_t>(bytes[pos + static_cast<size_t>(i)]);
    pos += 4;
    if (pos + n > bytes.size()) break;
    texts.push_back(bytes.substr(pos, n));
    pos += n;
  }
  if (pos != bytes.size()) {
    std::fprintf(stderr, "%s: truncated record\n", path);
    std::exit(1);
  }
  return texts;
}

double Percentile(std::vector<double>& v, double q) {
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s TOKENIZER_JSON REPS INPUTS...\n", argv[0]);
    return 2;
  }
  auto tok = orchid::Tokenizer::FromFile(argv[1]);
  if (!tok.ok()) {
    std::fprintf(stderr, "%s\n", tok.status().ToString().c_str());
    return 1;
  }
  const int reps = std::max(1, std::atoi(argv[2]));
  const orchid::EncodeOptions options;  // special tokens added, no truncation
  orchid::Encoding enc;
  for (int f = 3; f < argc; ++f) {
    const std::vector<std::string> texts = ReadInputs(argv[f]);
    if (texts.empty()) continue;
    uint64_t tokens = 0;
    for (const std::string& t : texts) {  // warm-up; also counts tokens
      if (orchid::Status st = (*tok)->Encode(t, options, &enc); !st.ok()) {
        std::fprintf(stderr, "%s: %s\n", argv[f], st.ToString().c_str());
        return 1;
      }
      tokens += enc.ids.size();
    }
    std::vector<double> us;
    us.reserve(texts.size() * static_cast<size_t>(reps));
    double total_s = 0;
    for (int r = 0; r < reps; ++r) {
      for (const std::string& t : texts) {
        const auto t0 = std::chrono::steady_clock::now();
        orchid::Status st = (*tok)->Encode(t, options, &enc);
        const auto t1 = std::chrono::steady_clock::now();
        if (!st.ok()) return 1;
        const double s = std::chrono::duration<double>(t1 - t0).count();
        total_s += s;
        us.push_back(s * 1e6);
      }
    }
    const double mean = total_s * 1e6 / static_cast<double>(us.size());
    const double p50 = Percentile(us, 0.50);
    const double p99 = Percentile(us, 0.99);
    std::printf(
        "{\"file\": \"%s\", \"inputs\": %zu, \"calls\": %zu, \"tokens\": %llu, \"p50_us\": %.3f, "
        "\"p99_us\": %.3f, \"mean_us\": %.3f, \"tokens_per_s\": %.1f}\n",
        argv[f], texts.size(), us.size(), static_cast<unsigned long long>(tokens), p50, p99, mean,
        static_cast<double>(tokens) * reps / total_s);
    std::fflush(stdout);
  }
  return 0;
}
