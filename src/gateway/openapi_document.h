// The OpenAPI document a server hands out at GET /openapi.json: src/gateway/openapi.json (every
// route orchid has) narrowed to what the models it serves can answer, so that a request valid by
// the document is one the server takes (what API testers such as schemathesis check).
//
// The source document marks what depends on the models with extension keys, which the served
// document replaces:
//
//   "x-orchid-serves": [kind, ...]   on any object (an operation, a oneOf/anyOf branch, a
//                                    property): the object is left out unless one of the kinds
//                                    is served. Kinds: "embed" (a dense embedding model),
//                                    "sparse" (SPLADE), "rerank" (a one-label scorer),
//                                    "classify" (a sequence classifier, rerankers included),
//                                    "bge-m3" (BGE-M3: also "embed" and "sparse"),
//                                    "colbert" (late interaction: per-token vectors and
//                                    MaxSim scores, no pooled vector), "images" (every model
//                                    a dual encoder that takes images: CLIP, SigLIP),
//                                    "text-only" (not so);
//                                    "default-<kind>": the first (default) model is of that kind
//                                    (the routes without a `model` field serve only that one).
//   "x-orchid-enum": "models"        → "enum": [every served name, null]
//   "x-orchid-enum": "prompts"       → "enum": [the default model's prompt names, null]
//   "x-orchid-enum": "tasks"         → "enum": [the default model's task adapters (Jina's names
//                                      and the adapter folders'), null]
//   "x-orchid-maximum": "token_id"   → "maximum": the smallest vocabulary's last id
//   "x-orchid-maximum": "dimensions" → "maximum": the smallest embedding dimension (none when
//                                      no embedding model is served); when the default model
//                                      lists Matryoshka widths, also "enum": [those, null]
//
// Only the route table's operations are kept (ServedModelFacts::operations): a path item loses
// the methods the table lacks, and goes when none is left.
//
// Thread safety: a pure function.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace orchid {

struct ServedModelFacts {
  std::set<std::string> kinds;            // "embed", "default-embed", "rerank", ...
  std::vector<std::string> model_names;   // in serving order
  std::vector<std::string> prompt_names;  // the default model's named prompts
  std::vector<std::string> task_names;    // the default model's task adapters (ModelInfo::tasks)
  std::vector<int> matryoshka_dimensions;  // the default model's (ModelInfo)
  int64_t max_token_id = 0;
  int64_t dimensions = 0;
  // The route table's operations, "post /embed" (lower-case method, path as the document
  // writes it); empty: every operation is kept.
  std::set<std::string> operations;
};

// The served document, or `document` unchanged when it is not a JSON object (never expected:
// the source is checked at build time by the tests).
std::string ServedOpenApiDocument(std::string_view document, const ServedModelFacts& facts);

}  // namespace orchid
