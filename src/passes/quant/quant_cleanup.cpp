// quant-cleanup: DQ -> Q pairs with identical parameters removed (exact; see
// patterns/cancel_dequantize_quantize.cpp), dead Q/DQ erased. Duplicate
// scales and zero points are pooled afterwards by pool-constants, then cse
// merges the DequantizeLinear nodes that became identical.
#include "passes/quant/quant.h"
#include "passes/quant/quant_fuse.h"

namespace onnxfold {

std::unique_ptr<Pass> createQuantCleanup() {
  using namespace quant;
  return makePatternPass(
      {"quant-cleanup",
       "remove DequantizeLinear -> QuantizeLinear pairs with identical parameters",
       {{addCancelDequantizeQuantizePatterns}},
       nullptr});
}

}  // namespace onnxfold
