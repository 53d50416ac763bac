#include "worker/scheduling.h"

namespace orchid {

const char* RequestClassName(RequestClass c) {
  switch (c) {
    case RequestClass::kQuery:
      return "query";
    case RequestClass::kBulk:
      return "bulk";
    case RequestClass::kAuto:
      break;
  }
  return "auto";
}

RequestClass Classify(RequestClass request_class, size_t inputs, int64_t tokens,
                      const QueryThresholds& thresholds) {
  if (request_class != RequestClass::kAuto) return request_class;
  const bool small = inputs <= size_t(thresholds.max_inputs) && tokens <= thresholds.max_tokens;
  return small ? RequestClass::kQuery : RequestClass::kBulk;
}

}  // namespace orchid
