// What convert-float16 keeps in float32 and how it converts weights: the block list and
// settings, the range check and the saturating conversion of weights (chunk by chunk, so a
// multi-GB decoder's weights are never held in memory twice).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/tensor.h"
#include "kernels/cast.h"
#include "passes/pass.h"

namespace onnxfold {

// The pass's settings (PassOptions::extra): convert-float16.keep-io-types=false makes the
// interface float16 too; convert-float16.block=Op,... and .allow=Op,... edit the block list.
struct Float16Settings {
  bool keep_io = true;
  std::map<std::string, std::string> blocked;  // op -> why it stays float32
};
// Throws Error for a keep-io-types that is no boolean.
Float16Settings readFloat16Settings(const PassOptions& options);

// Ops that stay in a float32 island when they read only its results and constants (the
// variance of a hand-written LayerNorm, the sum of a hand-written softmax).
bool isFloat16IslandStep(const std::string& op);

using kernels::kFloat16Max;
// Weights this large stand for infinities (masks of -FLT_MAX): saturating keeps their meaning.
constexpr double kFloat16Sentinel = 1e8;

// What a float32 tensor holds past float16's range.
struct HalfRange {
  int64_t saturated = 0;    // finite values of kFloat16Sentinel or more in magnitude
  double largest_kept = 0;  // the largest magnitude past the range below that (0: none)
};
// Reads the whole tensor (in chunks, without keeping it). Precondition: float32, loaded.
HalfRange scanHalfRange(const Tensor& t);

// `t` (float32) as float16: values past the range saturate to +-65504, NaN and infinities stay.
// From 64 KiB the result is a source computing its bytes when read (by the writer, once).
// Name, doc, metadata and the choice of external data are kept.
Tensor toFloat16(const Tensor& t);

}  // namespace onnxfold
