// freezing-patterns: applies the freezing rewrite patterns with the greedy
// pattern driver (rewrite.h), in every graph including subgraphs.
//
// The patterns (src/passes/patterns/), one family per file:
//   fuse_bn_into_conv.cpp              Conv/ConvTranspose + inference BatchNormalization
//   fuse_add_into_conv.cpp             Conv/ConvTranspose + per-channel constant Add -> bias
//   fuse_mul_into_conv.cpp             Conv/ConvTranspose + per-channel constant Mul -> weights
//   fuse_matmul_add_into_gemm.cpp      2-D MatMul + bias Add -> Gemm
//   fuse_transposes.cpp                Transpose + Transpose -> one (or none)
//   fuse_reshapes.cpp                  Reshape chains -> one; Reshape to x's shape -> none
//   cancel_squeeze_unsqueeze.cpp       Squeeze/Unsqueeze of the same axes -> none
//   eliminate_noops.cpp                Cast/Expand/Pad/Slice/Dropout/Concat/Split no-ops, and
//                                      Identity (also the eliminate-identity pass on its own)
//   eliminate_arithmetic_identities.cpp  x*1, x+0, x-0, x/1
//   drop_zero_rnn_state.cpp            RNN/GRU/LSTM initial states known to be zero
//   cancel_cast_round_trips.cpp        int64 dims cast to int32 and straight back
// Each pattern documents its Before/After, conditions and algebra in its file,
// and leaves the graph alone when unsure.
#include "passes/passes.h"
#include "passes/patterns/patterns.h"

namespace onnxfold {

std::unique_ptr<Pass> createFreezingPatterns() {
  return makePatternPass(
      {"freezing-patterns",
       "Conv+BatchNorm/Add/Mul folding, MatMul+Add to Gemm, no-op and identity removal, by one "
       "pattern driver",
       {{addFuseBatchNormPatterns, addFuseAddIntoConvPatterns, addFuseMulIntoConvPatterns,
         addFuseMatMulAddPatterns, addFuseTransposesPatterns, addFuseReshapesPatterns,
         addCancelSqueezeUnsqueezePatterns, addCancelCastRoundTripPatterns,
         addEliminateNoOpPatterns, addEliminateIdentityPatterns, addArithmeticIdentityPatterns,
         addDropZeroRnnStatePatterns}},
       nullptr});
}

}  // namespace onnxfold
