#include "gateway/static_pages.h"

#include <array>
#include <cctype>
#include <string>

#include "gateway/embedded_pages.h"  // generated from pages/ and Swagger UI's assets

namespace orchid {
namespace {

constexpr std::string_view kHtml = "text/html; charset=utf-8";

const std::array<StaticPage, 4>& Pages() {
  static const std::array<StaticPage, 4> pages = {{
      {"/", kHtml, embedded::PlaygroundHtml()},
      {"/docs", kHtml, embedded::DocsHtml()},
      {"/docs/swagger-ui-bundle.js", "text/javascript; charset=utf-8",
       embedded::SwaggerUiBundleJs()},
      {"/docs/swagger-ui.css", "text/css; charset=utf-8", embedded::SwaggerUiCss()},
  }};
  return pages;
}

std::string_view Trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Whether a media range's parameters hold q=0 (RFC 9110: "not acceptable").
bool QualityIsZero(std::string_view params) {
  while (!params.empty()) {
    const size_t semi = params.find(';');
    const std::string p = Lower(Trimmed(params.substr(0, semi)));
    if (p.size() > 2 && p.compare(0, 2, "q=") == 0) {
      return p.find_first_not_of("0.", 2) == std::string::npos;
    }
    if (semi == std::string_view::npos) break;
    params.remove_prefix(semi + 1);
  }
  return false;
}

}  // namespace

const StaticPage* FindStaticPage(std::string_view path) {
  for (const StaticPage& page : Pages()) {
    if (page.path == path) return &page;
  }
  return nullptr;
}

bool AcceptsHtml(std::string_view accept) {
  while (!accept.empty()) {
    const size_t comma = accept.find(',');
    const std::string_view range = accept.substr(0, comma);
    const size_t semi = range.find(';');
    if (Lower(Trimmed(range.substr(0, semi))) == "text/html") {
      return semi == std::string_view::npos || !QualityIsZero(range.substr(semi + 1));
    }
    if (comma == std::string_view::npos) break;
    accept.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace orchid
