#include "tokenizer/json_util.h"

namespace orchid::tok {

Result<std::string_view> ComponentType(JsonElement e, std::string_view where) {
  JsonObject o;
  if (e.get(o) != simdjson::SUCCESS) return JsonError(where, "expected an object");
  std::string_view type;
  if (o["type"].get(type) != simdjson::SUCCESS) {
    return JsonError(where, "missing or non-string \"type\"");
  }
  return type;
}

Status ReadBool(JsonObject o, std::string_view key, std::string_view where, bool* out) {
  JsonElement v;
  if (o[key].get(v) != simdjson::SUCCESS || v.is_null()) return Status::Ok();
  if (v.get(*out) != simdjson::SUCCESS) {
    return JsonError(where, StrCat({"\"", key, "\" must be a boolean"}));
  }
  return Status::Ok();
}

Status ReadOptionalBool(JsonObject o, std::string_view key, std::string_view where,
                        bool* has_value, bool* out) {
  *has_value = false;
  JsonElement v;
  if (o[key].get(v) != simdjson::SUCCESS || v.is_null()) return Status::Ok();
  if (v.get(*out) != simdjson::SUCCESS) {
    return JsonError(where, StrCat({"\"", key, "\" must be a boolean or null"}));
  }
  *has_value = true;
  return Status::Ok();
}

Status ReadString(JsonObject o, std::string_view key, std::string_view where,
                  std::string_view* out, bool required) {
  JsonElement v;
  if (o[key].get(v) != simdjson::SUCCESS || v.is_null()) {
    return required ? JsonError(where, "missing \"" + std::string(key) + "\"") : Status::Ok();
  }
  if (v.get(*out) != simdjson::SUCCESS) {
    return JsonError(where, StrCat({"\"", key, "\" must be a string"}));
  }
  return Status::Ok();
}

Status ReadUint(JsonObject o, std::string_view key, std::string_view where, uint64_t* out,
                bool required) {
  JsonElement v;
  if (o[key].get(v) != simdjson::SUCCESS || v.is_null()) {
    return required ? JsonError(where, "missing \"" + std::string(key) + "\"") : Status::Ok();
  }
  if (v.get(*out) != simdjson::SUCCESS) {
    return JsonError(where, StrCat({"\"", key, "\" must be a non-negative integer"}));
  }
  return Status::Ok();
}

}  // namespace orchid::tok
