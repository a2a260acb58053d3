#include "api/input.h"

#include "onnx/skeleton.h"

namespace onnxfold {

std::unique_ptr<Model> readInput(const ModelInput& in, ReadOptions ro) {
  if (!in.source) return readModel(in.bytes, ro);
  const Skeleton skeleton = readSkeleton(in.source);
  ro.skeleton = &skeleton;
  return readModel(skeleton.bytes, ro);
}

}  // namespace onnxfold
