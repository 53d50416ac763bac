#include "gateway/image_fetch.h"

#include <openssl/ssl.h>

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <memory>
#include <optional>

namespace orchid {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// One GET on `stream` (plain or TLS), the chain of async steps ending in *result.
template <class Stream>
void Get(Stream& stream, const FetchUrl& u, size_t max_bytes, Result<std::string>* result,
         const std::string& url) {
  auto req = std::make_shared<http::request<http::empty_body>>(http::verb::get, u.target, 11);
  req->set(http::field::host, u.host);
  req->set(http::field::user_agent, "orchid");
  req->set(http::field::accept, "image/*");
  http::async_write(
      stream, *req, [&stream, req, max_bytes, result, url](beast::error_code ec, size_t) {
        if (ec) {
          *result = Status::InvalidArgument(url + ": cannot send the request: " + ec.message());
          return;
        }
        auto buffer = std::make_shared<beast::flat_buffer>();
        auto parser = std::make_shared<http::response_parser<http::string_body>>();
        parser->body_limit(max_bytes);
        http::async_read(stream, *buffer, *parser,
                         [buffer, parser, result, url, max_bytes](beast::error_code ec2, size_t) {
                           if (ec2 == http::error::body_limit) {
                             *result = Status::OutOfRange(url + ": the image is larger than " +
                                                          std::to_string(max_bytes) + " bytes");
                             return;
                           }
                           if (ec2) {
                             *result =
                                 Status::InvalidArgument(url + ": no answer: " + ec2.message());
                             return;
                           }
                           const auto& res = parser->get();
                           const unsigned status = res.result_int();
                           if (status != 200) {
                             *result = Status::InvalidArgument(
                                 url + ": the server answered " + std::to_string(status) +
                                 (status / 100 == 3 ? " (redirects are not followed)" : ""));
                             return;
                           }
                           *result = std::string(res.body());
                         });
      });
}

}  // namespace

Result<FetchUrl> ParseFetchUrl(const std::string& url) {
  FetchUrl u;
  std::string rest;
  const std::string lower = Lower(url.substr(0, 8));
  if (lower.rfind("https://", 0) == 0) {
    u.https = true;
    rest = url.substr(8);
  } else if (lower.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else {
    return Status::InvalidArgument(url + ": not an http(s) URL");
  }
  const size_t slash = rest.find_first_of("/?#");
  std::string authority = rest.substr(0, slash);
  u.target = slash == std::string::npos ? "/" : rest.substr(slash);
  if (!u.target.empty() && u.target[0] != '/') u.target = "/" + u.target;
  if (const size_t hash = u.target.find('#'); hash != std::string::npos) u.target.resize(hash);
  if (authority.find('@') != std::string::npos) {
    return Status::InvalidArgument(url + ": user information in an image URL is refused");
  }
  if (authority.empty()) return Status::InvalidArgument(url + ": no host");
  const size_t colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']') == std::string::npos) {
    u.port = authority.substr(colon + 1);
    authority.resize(colon);
    if (u.port.empty() || u.port.size() > 5 ||
        !std::all_of(u.port.begin(), u.port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return Status::InvalidArgument(url + ": a bad port");
    }
  }
  if (authority.find_first_of(" \t\r\n[]") != std::string::npos) {
    return Status::InvalidArgument(url + ": a host orchid does not fetch from");
  }
  u.host = Lower(authority);
  if (u.port.empty()) u.port = u.https ? "443" : "80";
  for (char c : u.target) {
    if (static_cast<unsigned char>(c) <= 0x20) {
      return Status::InvalidArgument(url + ": spaces or control characters in the path");
    }
  }
  return u;
}

bool HostAllowed(const FetchUrl& url, const std::vector<std::string>& hosts) {
  for (const std::string& h : hosts) {
    if (h == url.host || h == url.host + ":" + url.port) return true;
  }
  return false;
}

Result<std::string> FetchImage(const std::string& url, const ImageFetchOptions& options) {
  ORCHID_ASSIGN_OR_RETURN(FetchUrl u, ParseFetchUrl(url));
  if (!HostAllowed(u, options.hosts)) {
    return Status::InvalidArgument(url + ": the host " + u.host +
                                   " is not one this server fetches images from "
                                   "(--image-fetch-hosts)");
  }
  asio::io_context ioc;
  Result<std::string> result = Status::InvalidArgument(
      url + ": no answer within " + std::to_string(options.timeout.count()) + " ms");
  tcp::resolver resolver(ioc);
  std::optional<asio::ssl::context> ctx;
  std::unique_ptr<beast::tcp_stream> plain;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls;
  if (u.https) {
    ctx.emplace(asio::ssl::context::tls_client);
    ctx->set_default_verify_paths();
    ctx->set_verify_mode(asio::ssl::verify_peer);
    tls = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(ioc, *ctx);
    if (!SSL_set_tlsext_host_name(tls->native_handle(), u.host.c_str())) {
      return Status::InvalidArgument(url + ": cannot set the TLS server name");
    }
    tls->set_verify_callback(asio::ssl::host_name_verification(u.host));
  } else {
    plain = std::make_unique<beast::tcp_stream>(ioc);
  }
  beast::tcp_stream& socket = u.https ? beast::get_lowest_layer(*tls) : *plain;
  const size_t max_bytes = options.max_bytes;
  resolver.async_resolve(u.host, u.port, [&](beast::error_code ec, tcp::resolver::results_type r) {
    if (ec) {
      result = Status::InvalidArgument(url + ": cannot resolve " + u.host + ": " + ec.message());
      return;
    }
    socket.async_connect(r, [&](beast::error_code ec2, const tcp::endpoint&) {
      if (ec2) {
        result = Status::InvalidArgument(url + ": cannot connect: " + ec2.message());
        return;
      }
      if (!u.https) return Get(*plain, u, max_bytes, &result, url);
      tls->async_handshake(asio::ssl::stream_base::client, [&](beast::error_code ec3) {
        if (ec3) {
          result = Status::InvalidArgument(url + ": TLS: " + ec3.message());
          return;
        }
        Get(*tls, u, max_bytes, &result, url);
      });
    });
  });
  ioc.run_for(options.timeout);
  return result;
}

}  // namespace orchid
