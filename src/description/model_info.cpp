#include "description/model_info.h"

namespace orchid {

const char* PoolingName(Pooling p) {
  switch (p) {
    case Pooling::kNone:
      return "none";
    case Pooling::kMean:
      return "mean";
    case Pooling::kCls:
      return "cls";
    case Pooling::kLastToken:
      return "last_token";
    case Pooling::kMax:
      return "max";
    case Pooling::kMeanSqrtLen:
      return "mean_sqrt_len";
    case Pooling::kWeightedMean:
      return "weighted_mean";
  }
  return "unknown";
}

}  // namespace orchid
