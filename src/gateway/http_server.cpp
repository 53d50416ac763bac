#include "gateway/http_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "gateway/error_response.h"

namespace orchid {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

constexpr uint32_t kHeaderLimit = 64 * 1024;
constexpr std::chrono::seconds kWriteTimeout{60};
// After an early error reply (413, 400), how long to keep reading and discarding what the
// client still sends, so that closing does not reset the connection before it reads the reply.
constexpr std::chrono::seconds kDrainTimeout{10};
// What the read that watches for a disconnect while a request is handled may take in at once.
constexpr size_t kWatchBytes = 4096;

// Shared by the server and every session; outlives the io threads.
struct ServerState {
  HttpServerOptions options;
  HttpHandler handler;
  std::atomic<bool> stopping{false};
  std::mutex mu;
  std::condition_variable idle_cv;
  int active = 0;  // requests read and not yet answered

  void BeginRequest() {
    std::lock_guard<std::mutex> lock(mu);
    ++active;
  }
  void EndRequest() {
    {
      std::lock_guard<std::mutex> lock(mu);
      --active;
    }
    idle_cv.notify_all();
  }
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, ServerState* state) : stream_(std::move(socket)), state_(state) {}

  void Start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->ReadHeader(); });
  }

 private:
  void ReadHeader() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(state_->options.max_body_bytes);
    stream_.expires_after(state_->options.idle_timeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) return OnReadError(ec);
    const auto& req = parser_->get();
    if (beast::iequals(req[http::field::expect], "100-continue")) {
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_,
                                                                     req.version());
      http::async_write(stream_, *cont,
                        [self = shared_from_this(), cont](beast::error_code wec, size_t) {
                          if (wec) return self->Close();
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    stream_.expires_after(state_->options.idle_timeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRequest(ec); });
  }

  void OnReadError(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      return SendEarlyError(413,
                            "request body is larger than the limit of " +
                                std::to_string(state_->options.max_body_bytes) + " bytes",
                            "request_too_large");
    }
    if (ec == http::error::header_limit) {
      return SendEarlyError(431, "request headers are too large", "headers_too_large");
    }
    if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message) {
      return SendEarlyError(400, "malformed HTTP request: " + ec.message(), "bad_request");
    }
    Close();  // end of stream, timeout, reset: nothing to answer
  }

  void OnRequest(beast::error_code ec) {
    if (ec) return OnReadError(ec);
    http::request<http::string_body> req = parser_->release();
    keep_alive_ = req.keep_alive();
    version_ = req.version();
    HttpRequest request;
    request.method = std::string(req.method_string());
    request.target = std::string(req.target());
    if (auto it = req.find(http::field::authorization); it != req.end()) {
      request.authorization = std::string(it->value());
    }
    if (auto it = req.find(http::field::origin); it != req.end()) {
      request.origin = std::string(it->value());
    }
    if (auto it = req.find(http::field::accept); it != req.end()) {
      request.accept = std::string(it->value());
    }
    if (auto it = req.find("x-request-timeout"); it != req.end()) {
      request.request_timeout = std::string(it->value());
    }
    if (auto it = req.find("x-stainless-timeout"); it != req.end()) {
      request.stainless_timeout = std::string(it->value());
    }
    request.body = std::move(req.body());
    cancellation_ = std::make_shared<Cancellation>();
    request.cancellation = cancellation_;
    replied_ = false;
    stream_.expires_never();  // the handler always replies; the engine has no deadline here
    state_->BeginRequest();
    state_->handler(std::move(request), [self = shared_from_this()](HttpResponse response) {
      net::post(self->stream_.get_executor(), [self, r = std::move(response)]() mutable {
        self->Write(std::move(r), /*counted=*/true);
      });
    });
    Watch();
  }

  // While the handler works, a read on the socket: end of stream or a reset means the client
  // has gone, and the request is cancelled (its queued work is dropped). Bytes that arrive
  // instead (a pipelined next request) are kept for the next read, and watching stops.
  void Watch() {
    watching_ = true;
    stream_.async_read_some(
        buffer_.prepare(kWatchBytes),
        [self = shared_from_this()](beast::error_code ec, size_t n) { self->OnWatch(ec, n); });
  }

  void OnWatch(beast::error_code ec, size_t n) {
    watching_ = false;
    if (!ec) {
      buffer_.commit(n);
      if (replied_) ReadHeader();  // else the reply's write goes on to read it
      return;
    }
    if (ec == net::error::operation_aborted) {  // stopped by the reply: read the next request
      if (replied_ && !closed_) ReadHeader();
      return;
    }
    if (!replied_) cancellation_->Cancel();  // the client is gone; its reply will fail to write
    if (replied_) Close();
  }

  void Write(HttpResponse r, bool counted) {
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(r.status), version_);
    res->set(http::field::server, "orchid");
    if (!r.content_type.empty()) res->set(http::field::content_type, r.content_type);
    if (!r.allow.empty()) res->set(http::field::allow, r.allow);
    if (!r.www_authenticate.empty()) res->set(http::field::www_authenticate, r.www_authenticate);
    for (const auto& [name, value] : r.headers) res->set(name, value);
    res->keep_alive(keep_alive_ && !state_->stopping.load());
    res->body() = std::move(r.body);
    res->prepare_payload();
    stream_.expires_after(kWriteTimeout);
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res, counted](beast::error_code ec, size_t) {
                        if (counted) {
                          self->state_->EndRequest();
                          self->replied_ = true;
                        }
                        if (ec) return self->Close();
                        if (self->draining_) return self->Drain();
                        if (!res->keep_alive()) return self->Close();
                        if (self->watching_) {
                          // The watch read is still pending: stop it; it then reads on.
                          beast::error_code ignored;
                          self->stream_.socket().cancel(ignored);
                          return;
                        }
                        self->ReadHeader();
                      });
  }

  // Answers a request the server could not read, then closes the connection gracefully.
  void SendEarlyError(int status, std::string message, std::string code) {
    ApiError e = ApiError::InvalidRequest(std::move(message), {}, std::move(code));
    e.http_status = status;
    keep_alive_ = false;
    draining_ = true;
    Write(ErrorResponse(e), /*counted=*/false);
  }

  void Drain() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kDrainTimeout);
    DrainSome();
  }

  void DrainSome() {
    stream_.async_read_some(net::buffer(drain_buf_),
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              if (ec) return self->Close();
                              self->DrainSome();
                            });
  }

  void Close() {
    closed_ = true;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  ServerState* state_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool keep_alive_ = false;
  unsigned version_ = 11;
  bool draining_ = false;
  std::array<char, 16384> drain_buf_{};
  std::shared_ptr<Cancellation> cancellation_;  // of the request being handled
  bool watching_ = false;                       // the watch read (Watch()) is pending
  bool replied_ = true;                         // the current request's reply is written
  bool closed_ = false;
};

}  // namespace

struct HttpServer::Impl {
  ServerState state;
  net::io_context ioc;
  net::executor_work_guard<net::io_context::executor_type> work{ioc.get_executor()};
  tcp::acceptor acceptor{net::make_strand(ioc)};
  std::vector<std::thread> threads;
  uint16_t port = 0;
  bool stopped = false;

  void Accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
      if (!ec) {
        std::make_shared<Session>(std::move(socket), &state)->Start();
      } else {
        spdlog::warn("accept failed: {}", ec.message());
      }
      Accept();
    });
  }
};

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler)
    : impl_(std::make_unique<Impl>()) {
  impl_->state.options = std::move(options);
  impl_->state.handler = std::move(handler);
}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start() {
  const HttpServerOptions& o = impl_->state.options;
  const std::string where = o.host + ":" + std::to_string(o.port);
  beast::error_code ec;
  tcp::resolver resolver(impl_->ioc);
  const auto endpoints = resolver.resolve(
      o.host, std::to_string(o.port), tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || endpoints.empty()) {
    return Status::IoError("cannot resolve " + where + ": " + ec.message());
  }
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();
  tcp::acceptor& acceptor = impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Status::IoError("cannot listen on " + where + ": " + ec.message());
  impl_->port = acceptor.local_endpoint().port();
  impl_->Accept();
  const int n = std::max(1, o.io_threads);
  for (int i = 0; i < n; ++i) impl_->threads.emplace_back([this] { impl_->ioc.run(); });
  return Status::Ok();
}

uint16_t HttpServer::port() const { return impl_->port; }

void HttpServer::StopAccepting() {
  impl_->state.stopping = true;
  net::post(impl_->acceptor.get_executor(), [this] {
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
  });
}

bool HttpServer::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->state.mu);
  return impl_->state.idle_cv.wait_for(lock, timeout, [&] { return impl_->state.active == 0; });
}

void HttpServer::Stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  StopAccepting();
  impl_->work.reset();
  impl_->ioc.stop();
  for (std::thread& t : impl_->threads) t.join();
  impl_->threads.clear();
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
}

}  // namespace orchid
