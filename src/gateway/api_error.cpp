#include "gateway/api_error.h"

#include <utility>

#include "gateway/json_writer.h"

namespace orchid {

ApiError ApiError::InvalidRequest(std::string message, std::string param, std::string code) {
  ApiError e;
  e.http_status = 400;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

ApiError ApiError::FromStatus(const Status& status, std::string param) {
  ApiError e;
  e.message = status.message();
  e.param = std::move(param);
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      e.http_status = 400;
      break;
    case StatusCode::kNotFound:
      e.http_status = 404;
      e.code = "not_found";
      break;
    case StatusCode::kResourceExhausted:
      e.http_status = 429;
      e.type = "rate_limit_error";
      e.code = "queue_full";
      break;
    case StatusCode::kUnavailable:
      e.http_status = 503;
      e.type = "server_error";
      e.code = "unavailable";
      break;
    case StatusCode::kDeadlineExceeded:
      e.http_status = 504;
      e.type = "server_error";
      e.code = "timeout";
      break;
    case StatusCode::kCancelled:
      e.http_status = 499;
      e.code = "cancelled";
      break;
    case StatusCode::kUnimplemented:
      e.http_status = 501;
      e.type = "server_error";
      e.code = "not_implemented";
      break;
    default:
      e.http_status = 500;
      e.type = "server_error";
      e.message = "internal error: " + status.ToString();
      break;
  }
  return e;
}

std::string OpenAiErrorBody(const ApiError& error) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject().Key("error").BeginObject();
  w.Key("message").String(error.message);
  w.Key("type").String(error.type);
  w.Key("param");
  if (error.param.empty())
    w.Null();
  else
    w.String(error.param);
  w.Key("code");
  if (error.code.empty())
    w.Null();
  else
    w.String(error.code);
  w.EndObject().EndObject();
  return out;
}

std::string CohereErrorBody(const ApiError& error) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject().Key("message").String(error.message).Key("param");
  if (error.param.empty())
    w.Null();
  else
    w.String(error.param);
  w.Key("code");
  if (error.code.empty())
    w.Null();
  else
    w.String(error.code);
  w.EndObject();
  return out;
}

std::string TeiErrorBody(const ApiError& error) {
  const char* kind = "Validation";
  if (error.http_status == 429)
    kind = "Overloaded";
  else if (error.http_status == 503)
    kind = "Unhealthy";
  else if (error.http_status >= 500)
    kind = "Backend";
  std::string out;
  JsonWriter w(&out);
  w.BeginObject().Key("error").String(error.message).Key("error_type").String(kind).EndObject();
  return out;
}

}  // namespace orchid
