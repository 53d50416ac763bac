// Every route's handler, by API; the route table (route_table.cpp) says which method and path
// each answers, whose error body it replies in, and whether it needs the API key. Each API's
// handlers are defined in the file named for it. A handler replies once through call.reply
// (route_call.h); its errors take the route's API's shape (call.Fail). `HandlerFunction Name;`
// declares `void Name(const ServedModels& served, RouteCall call)`.
//
// Thread safety: the handlers keep no state; any thread may run them.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "gateway/route_call.h"

namespace orchid {

// openai_routes.cpp — OpenAI's embeddings API, and orchid's extension of it:
//   POST /v1/embeddings   `input` texts or token ids, `encoding_format`, `dimensions`, `usage` in
//                         the reply (also /embeddings)
//   POST /embed_multi     orchid's: a BGE-M3 model's dense vectors, lexical weights and ColBERT
//                         vectors from one pass — /v1/embeddings' body and list reply with
//                         FlagEmbedding's outputs (bge_m3.h)
HandlerFunction OpenAiEmbeddings, EmbedMulti;

// tei_routes.cpp — text-embeddings-inference's; the routes without a `model` field serve the
// default (first) model:
//   POST /embed          pooled embeddings
//   POST /embed_sparse   a SPLADE model's term weights, or a BGE-M3 model's lexical weights
//   POST /embed_all      every token's last hidden state (ColBERT: its token vectors)
//   POST /similarity     a source sentence's similarity to each of several, by the model's
//                        similarity function (similarity_fn_name; cosine by default)
//   POST /predict        every label's probability for texts or pairs (classifiers)
//   POST /rerank         scores of a query against texts (score_request.h, score_routes.h)
//   POST /tokenize       tokens with ids, text and character offsets (tokenize_routes.h)
//   POST /decode         ids back to text (tokenize_routes.h)
HandlerFunction TeiEmbed, TeiEmbedSparse, TeiEmbedAll, TeiSimilarity, TeiPredict, TeiRerank;
HandlerFunction TeiTokenize, TeiDecode;
// POST /: what TEI's POST / means for the default model, picked from its type as TEI does: a
// SPLADE model's /embed_sparse; another embedder's /embed (or /similarity for an object `inputs`,
// InferenceClient.sentence_similarity); a reranker's /rerank for a body without `inputs` (TEI's
// {query, texts}), and for the rest — a classifier's every body — /predict in the Hugging Face
// Inference API's text-classification shape (InferenceClient.text_classification: `parameters`
// {top_k, function_to_apply}, a list per input even for one text).
Handler TeiRoot(const EmbeddingService& default_model);

// cohere_routes.cpp — Cohere's:
//   POST /v1/embed    v1 embed (what cohere.Client.embed posts)
//   POST /v2/embed    v2 embed, embeddings by type (cohere.ClientV2.embed)
//   POST /v2/rerank   v2 rerank (cohere.ClientV2.rerank; score_routes.h)
HandlerFunction CohereEmbedV1, CohereEmbedV2, CohereRerankV2;

// vllm_routes.cpp — vLLM's:
//   POST /pooling     task "token_embed": every input's per-token vectors (a ColBERT's
//                     projected, normalised and filtered as PyLate's encode; another embedder's
//                     last hidden state)
//   POST /v1/score    pair scores: a reranker's, or an embedder's similarity (also /score)
//   POST /v1/rerank   the rerank API of Jina and Cohere v1 as vLLM serves it: `query`,
//                     `documents`, `top_n`, `return_documents` (score_routes.h)
HandlerFunction VllmPooling, VllmScore, VllmRerank;

// server_routes.cpp — what the server says about itself, and the pages a browser opens:
//   GET /v1/models        OpenAI's list of every served model (Models); /v1/models/{id} one
//                         of them (Model: the id in call.param)
//   GET /info             the default model, in text-embeddings-inference's shape
//   GET /health           {"status":"ok"}, or 503 while no worker can take requests
//   GET /metrics          Prometheus text format (404 when the server keeps no metrics)
//   GET /openapi.json     the API's OpenAPI 3.1 description (src/gateway/openapi.json),
//                         narrowed to the route table and to what the served models answer
//   GET /                 the playground for a browser (Accept: text/html), else TEI's health
//                         check (as /health)
//   GET /docs, ...        the other browser pages (static_pages.h; Page: the one at call.route)
HandlerFunction Models, Model, Info, Health, Metrics, OpenApi, Root, Page;

// The document GET /openapi.json answers: openapi.json less the operations not in `operations`
// ("post /embed": the route table's) and less what `models` cannot answer (openapi_document.h).
// Set the services' prompts first: the document lists them.
std::string ServedOpenApi(const std::vector<RoutedModel>& models, std::set<std::string> operations);

}  // namespace orchid
