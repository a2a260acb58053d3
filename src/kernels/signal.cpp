// signal op family: see op_registry.h for the contract of infer() and compute().
#include "kernels/common.h"

namespace onnxfold {

void registerSignalOps(OpRegistry& r) { (void)r; }

}  // namespace onnxfold
