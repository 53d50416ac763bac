// The pages a browser opens on the server, compiled into the binary (no files at run time):
//
//   GET /                              the playground (pages/playground.html): similarity
//                                      heatmap, rerank and tokens views over the API
//   GET /docs                          Swagger UI over /openapi.json (pages/docs.html)
//   GET /docs/swagger-ui-bundle.js     Swagger UI's own build, from the PyPI package pinned in
//   GET /docs/swagger-ui.css           scripts/swagger-ui.txt (fetched when building)
//
// The router serves them without the API key (the playground asks for the key and sends it
// with its own API calls). GET / is the playground only for a client that asks for HTML (a
// browser); for the rest it stays text-embeddings-inference's health check.
// Thread safety: immutable data; any thread.
#pragma once

#include <string_view>

namespace orchid {

struct StaticPage {
  std::string_view path;
  std::string_view content_type;
  std::string_view body;
};

// The page served at `path` (no query string, no trailing slash), or null.
const StaticPage* FindStaticPage(std::string_view path);

// Whether an Accept header lists text/html (not with q=0): a browser navigating to the URL.
bool AcceptsHtml(std::string_view accept);

}  // namespace orchid
