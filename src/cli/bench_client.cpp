#include "cli/bench_client.h"

#include <grpcpp/grpcpp.h>
#include <simdjson.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstring>
#include <optional>
#include <utility>

#include "gateway/base64.h"
#include "gateway/json_writer.h"
#include "rpc/convert.h"

namespace orchid::cli {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

class HttpBenchClient final : public BenchClient {
 public:
  explicit HttpBenchClient(BenchTarget t) : target_(std::move(t)) {}

  Result<Embeddings> EmbedIds(const std::vector<std::vector<int32_t>>& ids) override {
    std::string body;
    JsonWriter w(&body);
    w.BeginObject().Key("input").BeginArray();
    for (const auto& seq : ids) {
      w.BeginArray();
      for (int32_t id : seq) w.Int(id);
      w.EndArray();
    }
    w.EndArray();
    Finish(&w);
    return Post(body, ids.size());
  }

  Result<Embeddings> EmbedTexts(const std::vector<std::string>& texts) override {
    std::string body;
    JsonWriter w(&body);
    w.BeginObject().Key("input").BeginArray();
    for (const auto& t : texts) w.String(t);
    w.EndArray();
    Finish(&w);
    return Post(body, texts.size());
  }

 private:
  void Finish(JsonWriter* w) {
    if (!target_.model.empty()) w->Key("model").String(target_.model);
    w->Key("encoding_format").String(target_.base64 ? "base64" : "float");
    w->EndObject();
  }

  Result<Embeddings> Post(const std::string& body, size_t expected_rows) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      try {
        if (!stream_) {
          stream_.emplace(ioc_);
          tcp::resolver resolver(ioc_);
          stream_->connect(resolver.resolve(target_.host, target_.port));
          stream_->socket().set_option(tcp::no_delay(true));
        }
        http::request<http::string_body> req{http::verb::post, target_.path, 11};
        req.set(http::field::host, target_.host);
        req.set(http::field::content_type, "application/json");
        if (!target_.api_key.empty())
          req.set(http::field::authorization, "Bearer " + target_.api_key);
        req.keep_alive(true);
        req.body() = body;
        req.prepare_payload();
        http::write(*stream_, req);
        beast::flat_buffer buffer;
        http::response_parser<http::string_body> parser;
        parser.body_limit(size_t(1) << 30);
        http::read(*stream_, buffer, parser);
        auto res = parser.release();
        if (!res.keep_alive()) stream_.reset();
        if (res.result_int() != 200) {
          return Status::Internal("HTTP " + std::to_string(res.result_int()) + ": " +
                                  res.body().substr(0, 300));
        }
        return Parse(res.body(), expected_rows);
      } catch (const std::exception& e) {
        stream_.reset();  // a keep-alive connection the server closed: reconnect once
        if (attempt == 1) return Status::Unavailable(std::string("HTTP: ") + e.what());
      }
    }
    return Status::Internal("unreachable");
  }

  Result<Embeddings> Parse(const std::string& text, size_t expected_rows) {
    simdjson::dom::element doc;
    if (parser_.parse(text).get(doc)) return Status::Corrupt("reply is not JSON");
    simdjson::dom::array data;
    if (doc["data"].get(data)) return Status::Corrupt("reply has no data array");
    Embeddings out;
    for (simdjson::dom::element item : data) {
      std::vector<float> row;
      simdjson::dom::element e;
      if (item["embedding"].get(e)) return Status::Corrupt("data item has no embedding");
      if (e.is_string()) {
        auto bytes = Base64Decode(std::string_view(e));
        if (!bytes || bytes->size() % 4 != 0) return Status::Corrupt("bad base64 embedding");
        row.resize(bytes->size() / 4);
        std::memcpy(row.data(), bytes->data(), bytes->size());
      } else {
        for (simdjson::dom::element v : simdjson::dom::array(e)) row.push_back(float(double(v)));
      }
      if (out.rows == 0) out.dim = int(row.size());
      if (int(row.size()) != out.dim) return Status::Corrupt("rows of different widths");
      out.data.insert(out.data.end(), row.begin(), row.end());
      ++out.rows;
    }
    if (size_t(out.rows) != expected_rows) return Status::Corrupt("wrong number of rows");
    return out;
  }

  BenchTarget target_;
  boost::asio::io_context ioc_;
  std::optional<beast::tcp_stream> stream_;
  simdjson::dom::parser parser_;
};

class GrpcBenchClient final : public BenchClient {
 public:
  explicit GrpcBenchClient(const BenchTarget& t) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(256 << 20);
    args.SetMaxSendMessageSize(256 << 20);
    // A channel per client: each bench client has its own connection, as HTTP clients do.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    stub_ = v1::Worker::NewStub(grpc::CreateCustomChannel(
        t.host + ":" + t.port, grpc::InsecureChannelCredentials(), args));
  }

  Result<Embeddings> EmbedIds(const std::vector<std::vector<int32_t>>& ids) override {
    v1::EmbedRequest req;
    for (const auto& seq : ids) {
      req.add_sequences()->mutable_token_ids()->Add(seq.begin(), seq.end());
    }
    v1::EmbedResponse resp;
    grpc::ClientContext ctx;
    grpc::Status st = stub_->Embed(&ctx, req, &resp);
    if (!st.ok()) return rpc::FromGrpc(st);
    Embeddings out;
    ORCHID_RETURN_IF_ERROR(rpc::FromProto(resp, &out));
    return out;
  }

  Result<Embeddings> EmbedTexts(const std::vector<std::string>&) override {
    return Status::Unimplemented("a worker takes token ids only");
  }

 private:
  std::unique_ptr<v1::Worker::Stub> stub_;
};

}  // namespace

Result<BenchTarget> ParseBenchTarget(const std::string& url) {
  BenchTarget t;
  std::string rest;
  if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else if (url.rfind("grpc://", 0) == 0) {
    t.kind = BenchTarget::Kind::kGrpc;
    rest = url.substr(7);
  } else {
    return Status::InvalidArgument("target `" + url + "` is not http://HOST:PORT or grpc://HOST:PORT");
  }
  if (const size_t slash = rest.find('/'); slash != std::string::npos) {
    if (t.kind == BenchTarget::Kind::kHttp) t.path = rest.substr(slash);
    rest = rest.substr(0, slash);
  }
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) {
    return Status::InvalidArgument("target `" + url + "` has no HOST:PORT");
  }
  t.host = rest.substr(0, colon);
  t.port = rest.substr(colon + 1);
  return t;
}

std::unique_ptr<BenchClient> MakeBenchClient(const BenchTarget& target) {
  if (target.kind == BenchTarget::Kind::kGrpc) return std::make_unique<GrpcBenchClient>(target);
  return std::make_unique<HttpBenchClient>(target);
}

}  // namespace orchid::cli
