#include "families/family.h"

#include "families/family_loaders.h"

namespace orchid {

Result<WeightReader> FamilyWeights(const Checkpoint& file, const std::string& anchor,
                                   const char* family) {
  const std::optional<std::string> prefix = FindWeightPrefix(file, anchor);
  if (!prefix) {
    return Status::Corrupt(file.path() + ": no tensor named \"" + anchor +
                           "\" (with or without a prefix); not a " + family + " checkpoint?");
  }
  return WeightReader(file, *prefix);
}

Result<std::unique_ptr<Family>> LoadFamily(const ModelSpec& spec, ops::Backend& backend) {
  if (spec.family == FamilyKind::kStatic) return LoadStaticEmbedding(spec, backend);
  ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> file, Checkpoint::Open(spec.dir));
  switch (spec.family) {
    case FamilyKind::kBert:
      return LoadBert(spec, *file, backend);
    case FamilyKind::kDecoder:
      return LoadDecoder(spec, *file, backend);
    case FamilyKind::kModernBert:
      return LoadModernBert(spec, *file, backend);
    case FamilyKind::kRopeEncoder:
      return LoadRopeEncoder(spec, *file, backend);
    case FamilyKind::kDeberta:
      return LoadDeberta(spec, *file, backend);
    case FamilyKind::kDualEncoder:
      return LoadDualEncoder(spec, *file, backend);
    case FamilyKind::kStatic:
      break;
  }
  return Status::Internal("unknown family");
}

}  // namespace orchid
