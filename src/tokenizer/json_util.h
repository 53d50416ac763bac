// simdjson DOM helpers for reading tokenizer.json sections with error messages that name the
// offending field. Internal to src/tokenizer.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace orchid::tok {

using JsonElement = simdjson::dom::element;
using JsonObject = simdjson::dom::object;

// Largest id a model vocabulary may give a token. Models map id → token through dense arrays, so
// an id of 2^31 - 1 in a malformed tokenizer.json would allocate tens of gigabytes (found by
// tests/fuzz/tokenizer_json_fuzz); real vocabularies stay far below (Gemma3: 262,144).
inline constexpr uint64_t kMaxVocabId = (uint64_t{1} << 22) - 1;

// Concatenates pieces (also sidesteps a GCC 12 -Wrestrict false positive on operator+).
inline std::string StrCat(std::initializer_list<std::string_view> pieces) {
  size_t n = 0;
  for (std::string_view p : pieces) n += p.size();
  std::string out;
  out.reserve(n);
  for (std::string_view p : pieces) out.append(p);
  return out;
}

inline Status JsonError(std::string_view where, std::string_view what) {
  return Status::Corrupt(StrCat({where, ": ", what}));
}

inline Status UnsupportedType(std::string_view where, std::string_view kind,
                              std::string_view type) {
  return Status::Corrupt(StrCat({where, ": unsupported ", kind, " type \"", type, "\""}));
}

// The "type" of a component object; errors when `e` is not an object or lacks one.
Result<std::string_view> ComponentType(JsonElement e, std::string_view where);

// Optional fields: *out keeps its default when the key is absent (or null for *OrNull).
Status ReadBool(JsonObject o, std::string_view key, std::string_view where, bool* out);
// Reads a bool-or-null: *has_value=false when absent or null.
Status ReadOptionalBool(JsonObject o, std::string_view key, std::string_view where,
                        bool* has_value, bool* out);
Status ReadString(JsonObject o, std::string_view key, std::string_view where,
                  std::string_view* out, bool required);
Status ReadUint(JsonObject o, std::string_view key, std::string_view where, uint64_t* out,
                bool required);

}  // namespace orchid::tok
