// Quantization finalize: shared helpers for the quant-* passes and their
// rewrite patterns (src/passes/quant/patterns/, one pattern per file).
//
// A QDQ model marks every quantized tensor with QuantizeLinear (Q) and
// DequantizeLinear (DQ) nodes whose scale and zero point are constants. The
// patterns read those parameters through QParams and only fire when they are
// constant, per tensor or per axis (never blocked), of an 8-bit integer type
// where an integer op consumes them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "passes/rewrite.h"

namespace onnxfold::quant {

// The constant parameters of one Q or DQ node.
struct QParams {
  const Node* node = nullptr;
  DataType qtype = DataType::kUndefined;  // the quantized (integer) type
  std::vector<float> scale;               // one per tensor or per slice of `axis`
  std::vector<int64_t> zero_point;        // same length as scale (zeros when absent)
  std::vector<int64_t> scale_dims;        // dims of the scale tensor ([] or [n])
  int64_t axis = -1;                      // normalized axis; -1 per tensor
  bool perTensor() const { return axis < 0; }
};

// The parameters of `n` (a default-domain QuantizeLinear or DequantizeLinear)
// when its scale and zero point are constants, the scale is float32 and
// positive and finite, and the layout is per tensor or per axis; else nullopt.
std::optional<QParams> paramsOf(const Node* n);
// Same type, layout and values (an absent zero point equals zeros).
bool sameParams(const QParams& a, const QParams& b);

// Integer range of int8/uint8/int16/uint16/int4/uint4/int32.
bool quantRange(DataType t, int64_t& lo, int64_t& hi);
bool is8Bit(DataType t);
// True when ONNX Runtime's CPU kernels implement QLinearConv / QLinearMatMul for
// these quantized types of x (a) and y, the weight written in x's type
// (paramsIn): x and y of one 8-bit type. The spec admits every 8-bit
// combination, but a model with another one does not load there ("Could not
// find an implementation"), so those take the integer form instead.
bool qlinearTypesRun(DataType x, DataType y);
// Integer ops take their two 8-bit operands in one signedness: a constant
// weight of the other type is shifted by 128 into the activation's type, its
// zero points too (every wq - zw, so every product, is unchanged). Why: ONNX
// Runtime's x86 kernels without VNNI multiply uint8 by int8 in pairs summed to
// int16 (vpmaddubsw), which saturates at the ends of the ranges: measured with
// ORT 1.30 on AVX2, MatMulInteger, QLinearConv and QLinearMatMul on uint8 x
// int8 and ConvInteger on int8 x uint8 were off by thousands, while uint8 x
// uint8 and int8 x int8 were exact (its own QDQ fusion turns int8 weights into
// uint8 on such CPUs for the same reason).
// The weight's parameters in type `t` (zero points shifted by 128 when its
// type is the other 8-bit one).
QParams paramsIn(const QParams& w, DataType t);
// The constant 8-bit weight behind `wq` in type `t` (the bytes with their top
// bit flipped when the types differ: int8 v + 128 as uint8), transposed when
// `transpose` (a 2-D Gemm weight with transB), as a value: `wq` itself when
// nothing changes.
Value* weightIn(Rewriter& rw, Value* wq, DataType t, bool transpose);
// The zero point input for the weight's parameters `p` (from paramsIn of
// `original`): the Q/DQ's own value when unchanged, else a new constant; a
// scalar when all its entries are equal. New constants are named from `base`.
Value* weightZeroPoint(Rewriter& rw, const QParams& original, const QParams& p,
                       const std::string& base);
// True when the default-domain `op`'s schema at `opset` admits element type `t`
// for input `input`.
bool schemaTakes(const std::string& op, int64_t opset, size_t input, DataType t);
// True when every zero point is the same (ConvInteger kernels accept only a
// per-tensor weight zero point: ONNX Runtime fails a per-channel one at run time).
bool uniformZeroPoint(const QParams& p);
// The quantized value QuantizeLinear computes for x: float division, round
// half to even, plus the zero point, saturated to `t`'s range.
int64_t quantizeOne(float x, float scale, int64_t zero_point, DataType t);

// True when Q(DQ(q)) = q for every q of the type with these scales and zero points, in
// float32 as the kernels compute it: what cancelling a DQ -> Q pair assumes. A scale so large
// that (q - z) * s overflows, or so small that it is subnormal, breaks it.
bool roundTrips(const QParams& p);

// The DQ producing `v`, or null.
Node* dequantizeOf(const Value* v);
// The constant tensor behind `v` (an initializer that is not a graph input), or null.
const Tensor* constantOf(const Value* v);
// The element type of `v` (from its type, or from its constant).
DataType dtypeOf(const Value* v);
// The rank of `v`, or -1 when unknown.
int64_t rankOf(const Value* v);

// The transpose of a constant matrix of 1-byte elements.
Tensor transposed8(const Tensor& t);
// Tensors built from integer values / float values.
Tensor intTensor(DataType t, std::vector<int64_t> dims, const std::vector<int64_t>& values);
Tensor floatTensor(std::vector<int64_t> dims, const std::vector<float>& values);
// An int64 1-D tensor (shapes, axes).
Tensor int64Tensor(const std::vector<int64_t>& values);

// A new node of `op` before `before`, whose first output gets type `t` and,
// when `like` is given and has a shape, like's shape.
Node* createTyped(Rewriter& rw, const std::string& op, const std::vector<Value*>& inputs,
                  Node* before, DataType t, const Value* like);
// The zero point input of a fused op: the Q/DQ's own zero point value, or a
// new scalar zero of `p.qtype` when the Q/DQ had none.
Value* zeroPointValue(Rewriter& rw, const QParams& p, const std::string& base);
// Copies `from`'s int, float, string and list attributes (the only kinds Q,
// Conv, MatMul and the data-movement ops have) onto `to`.
void copyAttributes(Rewriter& rw, const Node& from, Node* to);
// The Q/DQ's scale input value.
inline Value* scaleValue(const QParams& p) {
  return p.node->input(1);
}
// A per-tensor or per-axis parameter as a scalar when all its entries are
// equal (QLinearConv / ConvInteger in common runtimes accept a weight zero
// point only when it is uniform), else the original value.
Value* uniformOrSelf(Rewriter& rw, Value* v, const std::vector<int64_t>& values, DataType t,
                     const std::string& base);

// The integer form's tail after an int32 accumulator `acc` (shaped like
// `like`): [+ int32 bias] -> Cast(float) -> Mul(scale) [+ float bias]. The
// per-channel operands are laid out along axis `channel_axis` of a rank-`rank`
// result (trailing ones), or flat when per tensor. Returns the float result.
struct Rescale {
  Value* acc = nullptr;
  const Value* like = nullptr;  // the float value being replaced (for the shape)
  Node* before = nullptr;
  int64_t rank = 0, channel_axis = 0;
  std::vector<float> scale;        // 1 (per tensor) or one per channel
  const Tensor* bias_q = nullptr;  // int32 [channels], or null
  const Tensor* bias_f = nullptr;  // float32 [channels], or null
  std::string base;
};
Value* buildRescale(Rewriter& rw, const Rescale& r);

// Pattern families (one file each in patterns/).
void addFoldClipIntoQuantizePatterns(PatternList& out);      // fold_clip_into_quantize.cpp
void addCancelDequantizeQuantizePatterns(PatternList& out);  // cancel_dequantize_quantize.cpp
void addIntegerDataMovementPatterns(PatternList& out);       // integer_data_movement.cpp
void addQLinearConvPatterns(PatternList& out);               // qlinear_conv.cpp
void addQLinearMatMulPatterns(PatternList& out);             // qlinear_matmul.cpp
void addConvIntegerPatterns(PatternList& out);               // conv_integer.cpp
void addMatMulIntegerPatterns(PatternList& out);             // matmul_integer.cpp

// For the report of a pass that made integer ops: the opset stays (they need opset 10, an
// integer Clip 12, and Q/DQ already needs 10, 13 per axis).
void noteOpsetKept(const Model& model, PassContext& ctx);

// Shared by qlinear_conv.cpp and conv_integer.cpp: a Conv whose x and w come
// from DQ nodes with constant parameters, x per tensor, w a constant 8-bit
// integer tensor per tensor or per output channel, and bias absent, or a DQ of
// a constant int32 tensor with zero point 0 and scale x_scale * w_scale.
struct QuantConv {
  Node* conv = nullptr;
  QParams x, w;
  Value* x_q = nullptr;
  Value* w_q = nullptr;
  Value* bias_q = nullptr;         // int32, or null
  const Tensor* bias_f = nullptr;  // a constant float32 bias [channels] (allow_float_bias), or null
  int64_t channels = 0;
};
// With `allow_float_bias`, a constant float32 bias of `channels` elements is
// accepted too (kept in float by the integer form).
std::optional<QuantConv> matchQuantConv(Node* conv, bool allow_float_bias = false);
// True when `bias_dq` dequantizes a constant int32 tensor of `channels`
// elements with zero point 0 and scale x_scale * w_scale per channel.
bool isQuantBias(const Node* bias_dq, const QParams& x, const QParams& w, int64_t channels);
// The bias scale x_scale * w_scale[c] (float32 products, like quantizers compute it).
std::vector<float> biasScale(const QParams& x, const QParams& w, int64_t channels);

}  // namespace onnxfold::quant
