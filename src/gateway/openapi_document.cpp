#include "gateway/openapi_document.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "description/lora_adapters.h"
#include "gateway/json_writer.h"

namespace orchid {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// Whether an object is kept: it has no "x-orchid-serves", or one of its kinds is served.
bool Served(element value, const ServedModelFacts& facts) {
  element kinds;
  if (value.type() != element_type::OBJECT ||
      value["x-orchid-serves"].get(kinds) != simdjson::SUCCESS) {
    return true;
  }
  if (kinds.type() != element_type::ARRAY) return true;
  for (element k : simdjson::dom::array(kinds)) {
    if (k.type() == element_type::STRING && facts.kinds.count(std::string(std::string_view(k)))) {
      return true;
    }
  }
  return false;
}

// Each task's name and, where requests may also use it, its adapter folder's
// (retrieval_query for retrieval.query: TaskOfAdapterFolder).
std::vector<std::string> TaskNames(const std::vector<std::string>& tasks) {
  std::vector<std::string> out;
  for (const std::string& t : tasks) {
    out.push_back(t);
    std::string folder = t;
    std::replace(folder.begin(), folder.end(), '.', '_');
    std::replace(folder.begin(), folder.end(), '-', '_');
    if (folder != t && TaskOfAdapterFolder(folder) == t) out.push_back(folder);
  }
  return out;
}

// Where a value stands in the document: the root, its "paths" (keyed by path), one path item
// (keyed by method, among others), or anywhere else.
struct Place {
  enum Kind : uint8_t { kRoot, kPaths, kPathItem, kOther } kind = kOther;
  std::string_view path;  // a path item's
};

// Where the value under `key` of an object at `place` stands.
Place Under(Place place, std::string_view key) {
  if (place.kind == Place::kRoot && key == "paths") return {Place::kPaths, {}};
  if (place.kind == Place::kPaths) return {Place::kPathItem, key};
  return {};
}

bool IsMethod(std::string_view key) {
  return key == "get" || key == "post" || key == "put" || key == "delete" || key == "patch" ||
         key == "options" || key == "head" || key == "trace";
}

// Whether the route table has the operation (every one, when facts list none).
bool Routed(std::string_view method, std::string_view path, const ServedModelFacts& facts) {
  return facts.operations.empty() ||
         facts.operations.count(std::string(method) + " " + std::string(path)) > 0;
}

// Whether the field `key` of an object at `place` stays, as far as the route table says: not an
// operation the table lacks, nor a path item left without operations.
bool Listed(Place place, std::string_view key, element value, const ServedModelFacts& facts) {
  if (place.kind == Place::kPathItem) return !IsMethod(key) || Routed(key, place.path, facts);
  if (place.kind != Place::kPaths || value.type() != element_type::OBJECT) return true;
  for (simdjson::dom::key_value_pair field : simdjson::dom::object(value)) {
    if (IsMethod(field.key) && Routed(field.key, key, facts)) return true;
  }
  return false;
}

void WriteNames(const std::vector<std::string>& names, JsonWriter* w) {
  w->Key("enum").BeginArray();
  for (const std::string& n : names) w->String(n);
  w->Null().EndArray();
}

void Write(element value, const ServedModelFacts& facts, JsonWriter* w, Place place = {}) {
  if (value.type() == element_type::ARRAY) {
    w->BeginArray();
    for (element item : simdjson::dom::array(value)) {
      if (Served(item, facts)) Write(item, facts, w);
    }
    w->EndArray();
    return;
  }
  if (value.type() != element_type::OBJECT) {
    w->Raw(simdjson::to_string(value));
    return;
  }
  // {"anyOf": [...]} (or oneOf) left with one served branch is that branch.
  simdjson::dom::object object = value;
  if (object.size() == 1) {
    const simdjson::dom::key_value_pair only = *object.begin();
    if ((only.key == "anyOf" || only.key == "oneOf") && only.value.is_array()) {
      element kept;
      int served = 0;
      for (element branch : simdjson::dom::array(only.value)) {
        if (Served(branch, facts)) {
          kept = branch;
          ++served;
        }
      }
      if (served == 1) return Write(kept, facts, w, place);
    }
  }
  w->BeginObject();
  for (simdjson::dom::key_value_pair field : simdjson::dom::object(value)) {
    const std::string_view key = field.key;
    const element v = field.value;
    const std::string_view marker =
        v.type() == element_type::STRING ? std::string_view(v) : std::string_view();
    if (key == "x-orchid-serves") continue;
    if (key == "x-orchid-enum") {
      if (marker == "tasks") {
        WriteNames(TaskNames(facts.task_names), w);
      } else {
        WriteNames(marker == "models" ? facts.model_names : facts.prompt_names, w);
      }
    } else if (key == "x-orchid-maximum") {
      const int64_t maximum = marker == "token_id" ? facts.max_token_id : facts.dimensions;
      if (maximum > 0) w->Key("maximum").Int(maximum);  // 0: no such model served
      if (marker == "dimensions" && !facts.matryoshka_dimensions.empty()) {
        w->Key("enum").BeginArray();
        for (int d : facts.matryoshka_dimensions) w->Int(d);
        w->Null().EndArray();
      }
    } else if (Served(v, facts) && Listed(place, key, v, facts)) {
      w->Key(key);
      Write(v, facts, w, Under(place, key));
    }
  }
  w->EndObject();
}

}  // namespace

std::string ServedOpenApiDocument(std::string_view document, const ServedModelFacts& facts) {
  simdjson::dom::parser parser;
  element doc;
  if (parser.parse(document.data(), document.size()).get(doc) != simdjson::SUCCESS ||
      doc.type() != element_type::OBJECT) {
    return std::string(document);
  }
  std::string out;
  out.reserve(document.size());
  JsonWriter w(&out);
  Write(doc, facts, &w, Place{Place::kRoot, {}});
  return out;
}

}  // namespace orchid
