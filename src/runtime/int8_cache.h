// --dtype int8's start-up check, kept between runs (issue 31).
//
// The check (cpu_engine.cpp) runs the model in float32 over built-in texts to calibrate every
// int8 layer (the largest magnitude of each input channel), then in float32 and in int8 over
// other texts to measure the fidelity it reports and gates on: about 3 s for a BERT-base and
// 12 s for a 0.6B decoder on two cores, at every start. What it finds depends only on the
// model's files, orchid's own binary (the texts are compiled in, and the kernels' code) and the
// path the kernels take on this CPU. Under a key naming all of those, the ranges and the
// measured cosines are kept in a small file and read back on the next start instead of
// running the check again; the thresholds are applied to the kept numbers as to fresh ones.
//
// The key (Int8CacheKey) is text: the binary's path, size and modification time; every regular
// file under the model directory with its size and modification time; the instruction sets
// the int8 and bfloat16 kernels use and the environment variables that cap them; the token
// limit of the built-in texts. The file holds the whole key and is used only when it matches
// byte for byte. A file that cannot be read back whole (truncated, foreign, another version)
// is a miss, never an error: the check runs and rewrites it.
//
// File: "orchid-int8-check 1\n", then little-endian: u32 key length, the key, i32 samples,
// f64 mean cosine, f64 minimum cosine, u32 layers, and per layer u32 width and that many f32
// ranges. Written to a temporary name and renamed, so a reader never sees half a file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace orchid {

struct Int8CheckRecord {
  std::vector<std::vector<float>> input_ranges;  // per int8 layer, in the order they load
  int samples = 0;
  double mean_cosine = 0.0;
  double min_cosine = 0.0;
};

// $XDG_CACHE_HOME/orchid, else $HOME/.cache/orchid; empty when neither variable is set.
std::string DefaultInt8CacheDir();

// The key for this binary, the model in model_dir and this CPU; an error when any part cannot
// be read (then nothing is cached).
Result<std::string> Int8CacheKey(const std::string& model_dir, int max_length);

// dir/int8-check-<64-bit FNV-1a of the key, hex>.bin
std::string Int8CachePath(const std::string& dir, const std::string& key);

// The file's bytes for a record under a key, and back: nullopt unless data is exactly such a
// file for this key, with finite cosines and finite, non-negative ranges (int8_check_format.cpp:
// no dependency beyond the standard library, so the fuzzer builds it alone).
std::string SerializeInt8Check(const std::string& key, const Int8CheckRecord& r);
std::optional<Int8CheckRecord> ParseInt8Check(const std::string& data, const std::string& key);

// The record kept at path under exactly this key; nullopt when there is none (no file, another
// key, a damaged or foreign file).
std::optional<Int8CheckRecord> LoadInt8Check(const std::string& path, const std::string& key);

// Writes the record (creating path's directory); an error names the path.
Status StoreInt8Check(const std::string& path, const std::string& key, const Int8CheckRecord& r);

}  // namespace orchid
