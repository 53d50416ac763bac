#include "gateway/http_server.h"

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <mutex>
#include <thread>
#include <vector>

namespace orchid {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.max_body_bytes = 1024;
    server_ = std::make_unique<HttpServer>(o, [this](HttpRequest req, Reply reply) {
      HttpResponse r;
      r.body = req.method + " " + req.target + " " + std::to_string(req.body.size());
      {
        std::lock_guard<std::mutex> lock(mu_);
        seen_.push_back(req.cancellation);
        timeouts_.emplace_back(req.request_timeout.value_or("(none)"), req.stainless_timeout);
      }
      if (req.target == "/hold") {  // replied by the test
        std::lock_guard<std::mutex> lock(mu_);
        held_.push_back(reply);
        return;
      }
      if (req.target == "/later") {  // reply from another thread, later
        std::lock_guard<std::mutex> lock(mu_);
        repliers_.emplace_back([reply, r] {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          reply(r);
        });
        return;
      }
      reply(std::move(r));
    });
    ASSERT_TRUE(server_->Start().ok());
    ASSERT_NE(server_->port(), 0);
  }

  void TearDown() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::thread& t : repliers_) t.join();  // before the server goes
    held_.clear();  // they hold their sessions, which must go before the server's io_context
  }

  tcp::socket Connect() {
    tcp::socket s(ioc_);
    s.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), server_->port()));
    return s;
  }

  http::response<http::string_body> RoundTrip(tcp::socket& s, http::verb verb, std::string target,
                                              std::string body = {}) {
    http::request<http::string_body> req(verb, target, 11);
    req.set(http::field::host, "localhost");
    req.body() = std::move(body);
    req.prepare_payload();
    http::write(s, req);
    http::response<http::string_body> res;
    http::read(s, buffer_, res);
    return res;
  }

  // The cancellation of the i-th request handled (waits up to 5 s for it to arrive).
  std::shared_ptr<const Cancellation> Seen(size_t i) {
    for (int t = 0; t < 1000; ++t) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (seen_.size() > i) return seen_[i];
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return nullptr;
  }

  net::io_context ioc_;
  beast::flat_buffer buffer_;
  std::mutex mu_;
  std::vector<std::thread> repliers_;
  std::vector<std::shared_ptr<const Cancellation>> seen_;
  std::vector<std::pair<std::string, std::string>> timeouts_;
  std::vector<Reply> held_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  tcp::socket s = Connect();
  auto a = RoundTrip(s, http::verb::post, "/x", "hello");
  EXPECT_EQ(a.result_int(), 200);
  EXPECT_EQ(a.body(), "POST /x 5");
  EXPECT_TRUE(a.keep_alive());
  EXPECT_EQ(a[http::field::content_type], "application/json");
  auto b = RoundTrip(s, http::verb::get, "/later");
  EXPECT_EQ(b.body(), "GET /later 0");
  auto c = RoundTrip(s, http::verb::get, "/y?q=1");
  EXPECT_EQ(c.body(), "GET /y?q=1 0");
}

TEST_F(HttpServerTest, BodyOverTheLimitGets413AndTheServerGoesOn) {
  tcp::socket s = Connect();
  auto r = RoundTrip(s, http::verb::post, "/x", std::string(4096, 'a'));
  EXPECT_EQ(r.result_int(), 413);
  EXPECT_NE(r.body().find("\"error\""), std::string::npos);
  EXPECT_NE(r.body().find("request_too_large"), std::string::npos);
  EXPECT_FALSE(r.keep_alive());
  tcp::socket s2 = Connect();
  EXPECT_EQ(RoundTrip(s2, http::verb::post, "/x", std::string(1024, 'a')).result_int(), 200);
}

TEST_F(HttpServerTest, MalformedRequestGets400) {
  tcp::socket s = Connect();
  net::write(s, net::buffer(std::string("THIS IS NOT HTTP\r\n\r\n")));
  http::response<http::string_body> res;
  http::read(s, buffer_, res);
  EXPECT_EQ(res.result_int(), 400);
  EXPECT_NE(res.body().find("\"error\""), std::string::npos);
}

TEST_F(HttpServerTest, AnswersExpect100Continue) {
  tcp::socket s = Connect();
  net::write(s, net::buffer(std::string("POST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
                                        "Expect: 100-continue\r\n\r\n")));
  http::response<http::empty_body> interim;
  http::read(s, buffer_, interim);
  EXPECT_EQ(interim.result_int(), 100);
  net::write(s, net::buffer(std::string("abc")));
  http::response<http::string_body> res;
  http::read(s, buffer_, res);
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(res.body(), "POST /c 3");
}

// A client that closes its connection before the reply cancels its request (so the work queued
// for it can be dropped); the late reply goes nowhere, and the server goes on serving.
TEST_F(HttpServerTest, ClientClosingBeforeTheReplyCancelsTheRequest) {
  {
    tcp::socket s = Connect();
    http::request<http::string_body> req(http::verb::post, "/hold", 11);
    req.set(http::field::host, "localhost");
    req.set("X-Request-Timeout", "2.5");
    req.set("X-Stainless-Timeout", "600");
    req.body() = "abc";
    req.prepare_payload();
    http::write(s, req);
    auto c = Seen(0);
    ASSERT_NE(c, nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(c->cancelled());  // still connected
  }                                // closed
  auto c = Seen(0);
  for (int t = 0; t < 400 && !c->cancelled(); ++t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(c->cancelled());
  {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_EQ(timeouts_[0], std::make_pair(std::string("2.5"), std::string("600")));
    held_[0](HttpResponse{});  // the client is gone: dropped
  }
  tcp::socket s2 = Connect();
  EXPECT_EQ(RoundTrip(s2, http::verb::get, "/x").result_int(), 200);
}

// Watching for a disconnect does not get in the way of keep-alive: replies that come later from
// another thread, and a request the client sends before the previous reply (pipelined), are all
// answered in order on one connection, and none of them is cancelled.
TEST_F(HttpServerTest, WatchingKeepsKeepAliveAndPipelining) {
  tcp::socket s = Connect();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(RoundTrip(s, http::verb::get, "/later").body(), "GET /later 0");
  }
  std::string two;
  for (const char* target : {"/later", "/x"}) {
    two += std::string("GET ") + target + " HTTP/1.1\r\nHost: x\r\n\r\n";
  }
  net::write(s, net::buffer(two));
  for (const char* want : {"GET /later 0", "GET /x 0"}) {
    http::response<http::string_body> res;
    http::read(s, buffer_, res);
    EXPECT_EQ(res.body(), want);
  }
  EXPECT_EQ(RoundTrip(s, http::verb::get, "/y").body(), "GET /y 0");
  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_EQ(seen_.size(), 6u);
  for (const auto& c : seen_) {
    ASSERT_NE(c, nullptr);
    EXPECT_FALSE(c->cancelled());
  }
}

TEST_F(HttpServerTest, StopClosesConnectionsAndIsIdempotent) {
  tcp::socket s = Connect();
  EXPECT_EQ(RoundTrip(s, http::verb::get, "/x").result_int(), 200);
  server_->StopAccepting();
  EXPECT_TRUE(server_->WaitIdle(std::chrono::seconds(1)));
  server_->Stop();
  server_->Stop();
}

}  // namespace
}  // namespace orchid
