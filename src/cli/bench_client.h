// Clients for `orchid bench`: one blocking connection per client thread to an embedding
// endpoint — HTTP (OpenAI /v1/embeddings: orchid serve, orchid gateway, or a peer server) or
// gRPC (an orchid worker, pre-tokenized only).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/lazy_result.h"

namespace orchid::cli {

class BenchClient {
 public:
  virtual ~BenchClient() = default;
  // One request with these token-id sequences (special tokens included).
  virtual Result<Embeddings> EmbedIds(const std::vector<std::vector<int32_t>>& ids) = 0;
  // One request with these texts; Unimplemented where the endpoint only takes ids.
  virtual Result<Embeddings> EmbedTexts(const std::vector<std::string>& texts) = 0;
};

struct BenchTarget {
  enum class Kind { kHttp, kGrpc } kind = Kind::kHttp;
  std::string host;
  std::string port;
  std::string path = "/v1/embeddings";  // HTTP only
  std::string model;                    // sent as "model" when not empty
  bool base64 = true;                   // HTTP: encoding_format base64 (else float)
  std::string api_key;                  // HTTP: sent as `Authorization: Bearer` when not empty
};

// "http://host:port[/path]" or "grpc://host:port".
Result<BenchTarget> ParseBenchTarget(const std::string& url);

// A fresh client with its own connection (made lazily, remade after an error).
std::unique_ptr<BenchClient> MakeBenchClient(const BenchTarget& target);

}  // namespace orchid::cli
