// Fetching an image a request names by URL, for a server told which hosts it may fetch from
// (--image-fetch-hosts). Off by default: a server that fetches whatever URL a client sends can be
// made to call any host it reaches (SSRF; vLLM's CVE-2025-6242).
//
// Only http:// and https:// URLs whose host (or host:port) is on the allow-list; no user info;
// one GET, no redirect followed (a redirect could leave the list); a deadline for the whole
// exchange; the body capped at the largest encoded image taken; https verifies the server's
// certificate against the system's CAs and its name. Errors are kInvalidArgument (the URL, the
// host, the answer) or kOutOfRange (too large), naming the URL. Blocking; thread-safe (no
// shared state).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "core/status.h"

namespace orchid {

struct ImageFetchOptions {
  // Lower-case host names or IP addresses, each alone (any port) or as host:port. Empty: no
  // fetching at all.
  std::vector<std::string> hosts;
  std::chrono::milliseconds timeout{10000};
  size_t max_bytes = size_t(20) << 20;
};

// The parts of an http(s) URL that fetching needs; kInvalidArgument for anything else.
struct FetchUrl {
  bool https = false;
  std::string host;    // lower-case
  std::string port;    // "80" / "443" when the URL has none
  std::string target;  // path and query, "/" at least
};
Result<FetchUrl> ParseFetchUrl(const std::string& url);

// Whether `url`'s host is on the list (ParseFetchUrl first).
bool HostAllowed(const FetchUrl& url, const std::vector<std::string>& hosts);

// The body of a 200 answer to GET `url`.
Result<std::string> FetchImage(const std::string& url, const ImageFetchOptions& options);

}  // namespace orchid
