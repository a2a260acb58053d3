// libFuzzer target for the whole pipeline (issue 12): bytes of an ONNX model go through the
// public facade (api/onnxfold.h) as the CLI and the npm package use it: the default pipeline
// and a write to memory, then, picked by a hash of the input, one more job: quantization
// finalize (qoperator / integer / qdq-clean), outline-functions followed by inline-functions
// on the outlined output, splitConstants, or every registered pass with cancellation.
//
// Rejections (onnxfold::Error, the facade's one documented exception) are fine. Findings are
// crashes, sanitizer reports, hangs (-timeout), memory past -rss_limit_mb / -malloc_limit_mb,
// and any other exception escaping the facade. ONNXFOLD_FUZZ_STRICT=1 adds checks of the
// results: the output reads back, no pass broke the IR (the pass manager undoes and reports
// it), progress fractions stay in [0, 1].
//
// The structure-aware mutator (LLVMFuzzerCustomMutator) reads the input with the project's
// reader, changes the model (dims, attribute values, op types, wiring, weights, types, new
// nodes, opsets) and writes it back with the writer; half the time, or when the input does
// not read, it mutates bytes (LLVMFuzzerMutate). It is deterministic given its seed.
//
//   cmake --preset fuzz && cmake --build build/fuzz -j1 --target onnxfold_pipeline_fuzz
//   UBSAN_OPTIONS=halt_on_error=1 build/fuzz/onnxfold_pipeline_fuzz -max_total_time=600
//       -timeout=20 -rss_limit_mb=2048 -jobs=1 build/fuzz/pipeline-corpus
//       tests/fuzz/corpus/pipeline
//   (halt_on_error: the fuzz preset's UBSan reports and goes on; this makes them findings)
//
// The same LLVMFuzzerTestOneInput builds without libFuzzer with tests/fuzz/replay_main.cpp,
// which replays files (the wasm preset's onnxfold_pipeline_replay: size_t is 32-bit there).
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "api/onnxfold.h"
#include "fuzz_util.h"
#include "ir/graph.h"
#include "ir/graph_builder.h"
#include "ir/hash.h"
#include "onnx/reader.h"
#include "onnx/writer.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using namespace onnxfold;
using fuzz::BytesSource;
using fuzz::exactCopy;

// Tensor storage a run may hold (Options::memory_limit) and the fold budgets: modest, so
// that legitimately large constants fail cleanly instead of dominating the fuzzer's time.
constexpr uint64_t kMemoryLimit = uint64_t{256} << 20;
constexpr int64_t kSizeBudget = 4096;
constexpr int64_t kConstructorBudget = 256;
constexpr int kMaxIterations = 4;

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "pipeline_fuzz: %s: %s\n", what, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

bool strict() {
  static const bool s = [] {
    const char* v = std::getenv("ONNXFOLD_FUZZ_STRICT");
    return v != nullptr && v[0] == '1';
  }();
  return s;
}

// Picks the job for an input. The seed is FNV-1a's own basis, the one the committed corpus was
// minimized with (a different seed would send its files to other jobs).
uint64_t jobHash(const uint8_t* data, size_t size) {
  Fnv1a f;
  f.h = 0xcbf29ce484222325ull;
  f.bytes(data, size);
  return f.h;
}

Options baseOptions() {
  Options o;
  o.memory_limit = kMemoryLimit;
  o.size_budget = kSizeBudget;
  o.constructor_budget = kConstructorBudget;
  o.max_iterations = kMaxIterations;
  if (strict()) {
    // In [0, 1]; it may step back when a fixpoint round starts (js/host.js clamps that).
    o.on_progress = [](const Progress& p) {
      if (!(p.fraction >= 0 && p.fraction <= 1))
        finding("progress leaves [0, 1]",
                std::to_string(p.fraction) + " (" + p.stage + " " + p.pass + ")");
    };
  }
  return o;
}

std::string exceptionName(const std::exception& e) {
  return std::string(typeid(e).name()) + ": " + e.what();
}

// After a successful optimize (strict mode): the output reads back and no pass broke the IR.
void checkResult(const Report& r, const std::string& out) {
  if (!strict()) return;
  for (const std::string& w : r.warnings) {
    if (w.find("the IR is broken") != std::string::npos) finding("a pass broke the IR", w);
  }
  try {
    (void)inspect(exactCopy(reinterpret_cast<const uint8_t*>(out.data()), out.size()));
  } catch (const Error& e) {
    finding("the optimized model does not read back", e.what());
  }
}

// optimize(in) -> *out; false when it was rejected with an onnxfold::Error.
bool runOptimize(const ModelInput& in, const Options& o, std::string* out) {
  try {
    StringSink sink;
    const Report r = optimize(in, sink, o);
    checkResult(r, sink.out);
    if (out != nullptr) *out = std::move(sink.out);
    return true;
  } catch (const Error&) {
    return false;
  } catch (const std::exception& e) {
    finding("optimize threw an exception that is not an onnxfold::Error", exceptionName(e));
  }
}

void runSplit(const ModelInput& in) {
  Options o = baseOptions();
  o.fold_dequantize_weights = true;
  // splitConstants evaluates every constant node and does not apply Options::memory_limit
  // itself (only optimize does): set the process-wide cap the facade's Buffer offers.
  Buffer::setMemoryLimit(kMemoryLimit);
  try {
    StringSink prep, main;
    (void)splitConstants(in, prep, main, o);
  } catch (const Error&) {
  } catch (const std::exception& e) {
    Buffer::setMemoryLimit(0);
    finding("splitConstants threw an exception that is not an onnxfold::Error", exceptionName(e));
  }
  Buffer::setMemoryLimit(0);
}

void runInspect(const ModelInput& in) {
  try {
    (void)modelText(in);
    (void)moduleTreeText(in, 3);
    (void)inspect(in).toJson();
  } catch (const Error&) {
  } catch (const std::exception& e) {
    finding("inspect threw an exception that is not an onnxfold::Error", exceptionName(e));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Buffer bytes = exactCopy(data, size);
  const uint64_t h = jobHash(data, size);
  // Half the inputs are read as a file (weights stay ranges of it), half as bytes in memory.
  const ModelInput in =
      (h >> 32) & 1 ? ModelInput(std::make_shared<BytesSource>(bytes)) : ModelInput(bytes);
  try {
    (void)inspect(in);
  } catch (const Error&) {
    return 0;  // not a model: the reader fuzzer's business
  } catch (const std::exception& e) {
    finding("inspect threw an exception that is not an onnxfold::Error", exceptionName(e));
  }

  // The default pipeline and a write, as `onnxfold optimize` does.
  runOptimize(in, baseOptions(), nullptr);

  // One more job, picked by the input.
  switch (h % 6) {
    case 0: {  // quantization finalize into QOperator ops
      Options o = baseOptions();
      o.quant = "qoperator";
      runOptimize(in, o, nullptr);
      break;
    }
    case 1: {  // the other finalize modes
      Options o = baseOptions();
      o.quant = (h >> 8) & 1 ? "integer" : "qdq-clean";
      o.fold_dequantize_weights = (h >> 9) & 1;
      runOptimize(in, o, nullptr);
      break;
    }
    case 2: {  // outline repeated modules, then inline them again on the outlined output
      Options o = baseOptions();
      o.passes = {"outline-functions"};
      std::string outlined;
      if (!runOptimize(in, o, &outlined)) break;
      o = baseOptions();
      o.passes = {"inline-functions",   "freeze", "fold-constants", "freezing-patterns",
                  "eliminate-identity", "cse",    "pool-constants", "dce"};
      runOptimize(exactCopy(reinterpret_cast<const uint8_t*>(outlined.data()), outlined.size()), o,
                  nullptr);
      break;
    }
    case 3:
      runSplit(in);
      break;
    case 4: {  // every registered pass, some cancelled part way
      Options o = baseOptions();
      o.passes = availablePasses();
      o.fold_dequantize_weights = (h >> 9) & 1;
      o.verify_each = true;
      if ((h >> 10) & 1)
        o.cancelled = [left = static_cast<int>((h >> 11) % 24)]() mutable { return left-- <= 0; };
      runOptimize(in, o, nullptr);
      break;
    }
    default:  // the read-only views: text, module tree, summary
      runInspect(in);
      break;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Structure-aware mutator
// ---------------------------------------------------------------------------------------------

namespace {

// splitmix64: deterministic across platforms (the std:: distributions are not).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }
  bool oneIn(size_t n) { return below(n) == 0; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[below(v.size())];
  }

 private:
  uint64_t s_;
};

const std::vector<std::string>& onnxOps() {
  static const std::vector<std::string> ops = {"Abs",
                                               "Acos",
                                               "Acosh",
                                               "Add",
                                               "AffineGrid",
                                               "And",
                                               "ArgMax",
                                               "ArgMin",
                                               "Asin",
                                               "Asinh",
                                               "Atan",
                                               "Atanh",
                                               "AveragePool",
                                               "BatchNormalization",
                                               "BitShift",
                                               "BitwiseAnd",
                                               "BitwiseNot",
                                               "BitwiseOr",
                                               "BitwiseXor",
                                               "BlackmanWindow",
                                               "Cast",
                                               "CastLike",
                                               "Ceil",
                                               "Celu",
                                               "CenterCropPad",
                                               "Clip",
                                               "Col2Im",
                                               "Compress",
                                               "Concat",
                                               "Constant",
                                               "ConstantOfShape",
                                               "Conv",
                                               "ConvInteger",
                                               "ConvTranspose",
                                               "Cos",
                                               "Cosh",
                                               "CumSum",
                                               "DFT",
                                               "DepthToSpace",
                                               "DequantizeLinear",
                                               "Det",
                                               "Div",
                                               "Dropout",
                                               "DynamicQuantizeLinear",
                                               "Einsum",
                                               "Elu",
                                               "Equal",
                                               "Erf",
                                               "Exp",
                                               "Expand",
                                               "EyeLike",
                                               "Flatten",
                                               "Floor",
                                               "GRU",
                                               "Gather",
                                               "GatherElements",
                                               "GatherND",
                                               "Gelu",
                                               "Gemm",
                                               "GlobalAveragePool",
                                               "GlobalLpPool",
                                               "GlobalMaxPool",
                                               "Greater",
                                               "GreaterOrEqual",
                                               "GridSample",
                                               "GroupNormalization",
                                               "HammingWindow",
                                               "HannWindow",
                                               "HardSigmoid",
                                               "HardSwish",
                                               "Hardmax",
                                               "Identity",
                                               "InstanceNormalization",
                                               "IsInf",
                                               "IsNaN",
                                               "LRN",
                                               "LSTM",
                                               "LayerNormalization",
                                               "LeakyRelu",
                                               "Less",
                                               "LessOrEqual",
                                               "Log",
                                               "LogSoftmax",
                                               "LpNormalization",
                                               "LpPool",
                                               "MatMul",
                                               "MatMulInteger",
                                               "Max",
                                               "MaxPool",
                                               "MaxRoiPool",
                                               "MaxUnpool",
                                               "Mean",
                                               "MelWeightMatrix",
                                               "Min",
                                               "Mish",
                                               "Mod",
                                               "Mul",
                                               "Neg",
                                               "NonZero",
                                               "NonMaxSuppression",
                                               "Not",
                                               "OneHot",
                                               "Or",
                                               "PRelu",
                                               "Pad",
                                               "Pow",
                                               "QLinearConv",
                                               "QLinearMatMul",
                                               "QuantizeLinear",
                                               "RMSNormalization",
                                               "RNN",
                                               "RandomNormalLike",
                                               "Range",
                                               "Reciprocal",
                                               "ReduceL1",
                                               "ReduceL2",
                                               "ReduceLogSum",
                                               "ReduceLogSumExp",
                                               "ReduceMax",
                                               "ReduceMean",
                                               "ReduceMin",
                                               "ReduceProd",
                                               "ReduceSum",
                                               "ReduceSumSquare",
                                               "Relu",
                                               "Reshape",
                                               "Resize",
                                               "ReverseSequence",
                                               "RoiAlign",
                                               "RotaryEmbedding",
                                               "Round",
                                               "STFT",
                                               "Scatter",
                                               "ScatterElements",
                                               "ScatterND",
                                               "Selu",
                                               "Shape",
                                               "Shrink",
                                               "Sigmoid",
                                               "Sign",
                                               "Sin",
                                               "Sinh",
                                               "Size",
                                               "Slice",
                                               "Softmax",
                                               "Softplus",
                                               "Softsign",
                                               "SpaceToDepth",
                                               "Split",
                                               "Sqrt",
                                               "Squeeze",
                                               "Sub",
                                               "Sum",
                                               "Swish",
                                               "Tan",
                                               "Tanh",
                                               "ThresholdedRelu",
                                               "Tile",
                                               "TopK",
                                               "Transpose",
                                               "Trilu",
                                               "Unique",
                                               "Unsqueeze",
                                               "Upsample",
                                               "Where",
                                               "Xor",
                                               "Attention",
                                               "TensorScatter"};
  return ops;
}

struct AttrName {
  const char* name;
  AttrType type;
};

const std::vector<AttrName>& attrNames() {
  using A = AttrType;
  static const std::vector<AttrName> names = {{"axis", A::kInt},
                                              {"axes", A::kInts},
                                              {"perm", A::kInts},
                                              {"keepdims", A::kInt},
                                              {"kernel_shape", A::kInts},
                                              {"strides", A::kInts},
                                              {"pads", A::kInts},
                                              {"dilations", A::kInts},
                                              {"group", A::kInt},
                                              {"shape", A::kInts},
                                              {"output_shape", A::kInts},
                                              {"output_padding", A::kInts},
                                              {"split", A::kInts},
                                              {"starts", A::kInts},
                                              {"ends", A::kInts},
                                              {"to", A::kInt},
                                              {"transA", A::kInt},
                                              {"transB", A::kInt},
                                              {"blocksize", A::kInt},
                                              {"batch_dims", A::kInt},
                                              {"k", A::kInt},
                                              {"largest", A::kInt},
                                              {"sorted", A::kInt},
                                              {"allowzero", A::kInt},
                                              {"noop_with_empty_axes", A::kInt},
                                              {"num_outputs", A::kInt},
                                              {"exclusive", A::kInt},
                                              {"reverse", A::kInt},
                                              {"select_last_index", A::kInt},
                                              {"ceil_mode", A::kInt},
                                              {"count_include_pad", A::kInt},
                                              {"p", A::kInt},
                                              {"hidden_size", A::kInt},
                                              {"layout", A::kInt},
                                              {"upper", A::kInt},
                                              {"fmod", A::kInt},
                                              {"saturate", A::kInt},
                                              {"block_size", A::kInt},
                                              {"output_dtype", A::kInt},
                                              {"dtype", A::kInt},
                                              {"num_groups", A::kInt},
                                              {"onesided", A::kInt},
                                              {"inverse", A::kInt},
                                              {"stash_type", A::kInt},
                                              {"value_int", A::kInt},
                                              {"value_ints", A::kInts},
                                              {"linear_before_reset", A::kInt},
                                              {"center_point_box", A::kInt},
                                              {"alpha", A::kFloat},
                                              {"beta", A::kFloat},
                                              {"gamma", A::kFloat},
                                              {"epsilon", A::kFloat},
                                              {"bias", A::kFloat},
                                              {"lambd", A::kFloat},
                                              {"ratio", A::kFloat},
                                              {"min", A::kFloat},
                                              {"max", A::kFloat},
                                              {"scale", A::kFloat},
                                              {"scales", A::kFloats},
                                              {"value_float", A::kFloat},
                                              {"value_floats", A::kFloats},
                                              {"spatial_scale", A::kFloat},
                                              {"mode", A::kString},
                                              {"auto_pad", A::kString},
                                              {"direction", A::kString},
                                              {"coordinate_transformation_mode", A::kString},
                                              {"nearest_mode", A::kString},
                                              {"reduction", A::kString},
                                              {"approximate", A::kString},
                                              {"equation", A::kString},
                                              {"value", A::kTensor}};
  return names;
}

const std::vector<std::string>& attrStrings() {
  static const std::vector<std::string> s = {"",
                                             "NOTSET",
                                             "SAME_UPPER",
                                             "SAME_LOWER",
                                             "VALID",
                                             "constant",
                                             "reflect",
                                             "edge",
                                             "wrap",
                                             "linear",
                                             "nearest",
                                             "cubic",
                                             "bilinear",
                                             "bicubic",
                                             "half_pixel",
                                             "pytorch_half_pixel",
                                             "asymmetric",
                                             "align_corners",
                                             "tf_crop_and_resize",
                                             "half_pixel_symmetric",
                                             "round_prefer_floor",
                                             "round_prefer_ceil",
                                             "floor",
                                             "ceil",
                                             "DCR",
                                             "CRD",
                                             "forward",
                                             "reverse",
                                             "bidirectional",
                                             "none",
                                             "add",
                                             "mul",
                                             "max",
                                             "min",
                                             "tanh",
                                             "ij,jk->ik",
                                             "...ii->...i",
                                             "i,i",
                                             "abc",
                                             "ab,bc->ac",
                                             "Relu",
                                             "Tanh",
                                             "Sigmoid",
                                             "zeros",
                                             "border",
                                             "reflection"};
  return s;
}

int64_t interestingInt(Rng& r, int64_t current) {
  static const int64_t values[] = {0,
                                   1,
                                   -1,
                                   2,
                                   -2,
                                   3,
                                   4,
                                   7,
                                   8,
                                   16,
                                   255,
                                   256,
                                   1024,
                                   65535,
                                   65536,
                                   std::numeric_limits<int32_t>::max(),
                                   std::numeric_limits<int32_t>::min(),
                                   int64_t{1} << 31,
                                   int64_t{1} << 32,
                                   (int64_t{1} << 32) + 1,
                                   int64_t{1} << 62,
                                   -(int64_t{1} << 31),
                                   std::numeric_limits<int64_t>::max(),
                                   std::numeric_limits<int64_t>::min(),
                                   std::numeric_limits<int64_t>::max() - 1,
                                   std::numeric_limits<int64_t>::min() + 1};
  switch (r.below(4)) {
    case 0:  // a neighbour, wrapping (no signed overflow in the harness itself)
      return static_cast<int64_t>(static_cast<uint64_t>(current) + (r.oneIn(2) ? 1u : ~0ull));
    case 1:
      return static_cast<int64_t>(r.below(17)) - 8;
    default:
      return values[r.below(sizeof(values) / sizeof(values[0]))];
  }
}

float interestingFloat(Rng& r, float current) {
  static const float values[] = {0.0f,
                                 -0.0f,
                                 1.0f,
                                 -1.0f,
                                 0.5f,
                                 2.0f,
                                 1e-45f,
                                 1e-38f,
                                 FLT_MAX,
                                 -FLT_MAX,
                                 65504.0f,
                                 1e30f,
                                 -1e30f,
                                 std::numeric_limits<float>::infinity(),
                                 -std::numeric_limits<float>::infinity(),
                                 std::numeric_limits<float>::quiet_NaN(),
                                 2147483648.0f,
                                 9.3e18f};
  switch (r.below(4)) {
    case 0:
      return current * (r.oneIn(2) ? 2.0f : -0.5f);
    case 1:
      return static_cast<float>(static_cast<int>(r.below(33)) - 16) / 4.0f;
    default:
      return values[r.below(sizeof(values) / sizeof(values[0]))];
  }
}

// Dims for a new tensor: few elements (<= 4096), or none at all with some huge dims.
std::vector<int64_t> mutateDims(Rng& r, std::vector<int64_t> dims) {
  switch (r.below(6)) {
    case 0:
      if (dims.size() < 6) dims.insert(dims.begin() + r.below(dims.size() + 1), 1 + r.below(4));
      break;
    case 1:
      if (!dims.empty()) dims.erase(dims.begin() + r.below(dims.size()));
      break;
    case 2:  // zero elements, a huge dim beside them
      if (dims.empty()) dims.push_back(1);
      dims[r.below(dims.size())] = 0;
      dims.insert(dims.begin() + r.below(dims.size() + 1),
                  r.oneIn(2) ? std::numeric_limits<int64_t>::max() : (int64_t{1} << 31) + 1);
      break;
    default:
      if (dims.empty()) {
        dims.push_back(static_cast<int64_t>(r.below(5)));
      } else {
        int64_t& d = dims[r.below(dims.size())];
        const bool small = r.oneIn(2) || d == std::numeric_limits<int64_t>::max();
        d = small ? static_cast<int64_t>(r.below(9)) : d + (r.oneIn(2) ? 1 : -1);
        if (d < 0) d = 0;
      }
      break;
  }
  const int64_t n = checkedElementCount(dims);
  if (n < 0 || n > 4096) return {static_cast<int64_t>(r.below(5))};
  return dims;
}

void setInterestingElement(Rng& r, Tensor& t, size_t i) {
  uint8_t* b = t.mutableBytes();
  switch (t.dtype()) {
    case DataType::kFloat: {
      float v = interestingFloat(r, t.at<float>(i));
      std::memcpy(b + i * 4, &v, 4);
      break;
    }
    case DataType::kDouble: {
      double v = interestingFloat(r, static_cast<float>(t.at<double>(i)));
      std::memcpy(b + i * 8, &v, 8);
      break;
    }
    case DataType::kInt64: {
      int64_t v = interestingInt(r, t.at<int64_t>(i));
      std::memcpy(b + i * 8, &v, 8);
      break;
    }
    case DataType::kInt32: {
      int32_t v = static_cast<int32_t>(interestingInt(r, t.at<int32_t>(i)));
      std::memcpy(b + i * 4, &v, 4);
      break;
    }
    default: {
      const size_t bits = static_cast<size_t>(bitsPerElement(t.dtype()));
      const size_t width = bits >= 8 ? bits / 8 : 1;
      const size_t at = bits >= 8 ? i * width : i * bits / 8;
      for (size_t k = 0; k < width && at + k < t.byteSize(); ++k)
        b[at + k] = r.oneIn(3) ? 0xff : static_cast<uint8_t>(r.next());
      break;
    }
  }
}

DataType randomDataType(Rng& r) {
  static const std::vector<DataType> types = {
      DataType::kFloat,   DataType::kFloat,        DataType::kInt64,    DataType::kInt64,
      DataType::kInt32,   DataType::kUint8,        DataType::kInt8,     DataType::kBool,
      DataType::kFloat16, DataType::kDouble,       DataType::kBfloat16, DataType::kUint16,
      DataType::kInt16,   DataType::kUint32,       DataType::kUint64,   DataType::kInt4,
      DataType::kUint4,   DataType::kFloat8E4M3FN, DataType::kString};
  return r.pick(types);
}

// A new tensor of `dtype` and `dims`, its elements taken cyclically from `old` when the types
// match, else mostly zeros with a few interesting values.
Tensor remadeTensor(Rng& r, const Tensor& old, DataType dtype, std::vector<int64_t> dims) {
  Tensor t(dtype, std::move(dims));
  t.name = old.name;
  if (dtype == DataType::kString) {
    for (std::string& s : t.mutableStrings())
      s = r.pick(attrStrings());
    return t;
  }
  const size_t n = static_cast<size_t>(t.numElements());
  if (n == 0) return t;
  if (dtype == old.dtype() && old.isLoaded() && old.byteSize() != 0 && bitsPerElement(dtype) >= 8) {
    const size_t w = static_cast<size_t>(bitsPerElement(dtype)) / 8;
    uint8_t* dst = t.mutableBytes();
    const uint8_t* src = old.bytes();
    const size_t usable = old.byteSize() / w * w;  // whole elements
    for (size_t i = 0; usable != 0 && i < t.byteSize(); ++i)
      dst[i] = src[i % usable];
  }
  for (size_t k = 0, m = 1 + r.below(3); k < m; ++k)
    setInterestingElement(r, t, r.below(n));
  return t;
}

void mutateTensor(Rng& r, Tensor& t) {
  if (r.oneIn(3) || !t.isLoaded() || t.dtype() == DataType::kString ||
      t.dtype() == DataType::kUndefined) {
    DataType dt = r.oneIn(3) ? randomDataType(r) : t.dtype();
    if (dt == DataType::kUndefined) dt = DataType::kFloat;
    std::vector<int64_t> dims = t.dims();
    const int64_t n = checkedElementCount(dims);
    if (r.oneIn(2) || n < 0 || n > 4096) dims = mutateDims(r, dims);
    t = remadeTensor(r, t, dt, std::move(dims));
    return;
  }
  const int64_t n = t.numElements();
  if (n <= 0) {
    t = remadeTensor(r, t, t.dtype(), mutateDims(r, t.dims()));
    return;
  }
  for (size_t k = 0, m = 1 + r.below(3); k < m; ++k)
    setInterestingElement(r, t, r.below(static_cast<size_t>(n)));
}

void mutateShape(Rng& r, Type& type) {
  if (!type.isTensor()) {
    if (r.oneIn(4)) type = Type::tensor(randomDataType(r), Shape{});
    return;
  }
  if (r.oneIn(6)) {
    type.elem_type = randomDataType(r);
    return;
  }
  if (!type.shape || r.oneIn(10)) {
    if (type.shape && r.oneIn(2))
      type.shape.reset();
    else
      type.shape = Shape{};
    return;
  }
  std::vector<Dim>& dims = type.shape->dims;
  if (dims.empty() || r.oneIn(5)) {
    if (dims.size() < 8) dims.insert(dims.begin() + r.below(dims.size() + 1), Dim::known(1));
    return;
  }
  if (r.oneIn(5)) {
    dims.erase(dims.begin() + r.below(dims.size()));
    return;
  }
  Dim& d = dims[r.below(dims.size())];
  switch (r.below(4)) {
    case 0:
      d = Dim::symbol(r.oneIn(2) ? "N" : "batch");
      break;
    case 1:
      d = Dim();
      break;
    default: {
      int64_t v = interestingInt(r, d.value);
      if (v < 0) v = r.oneIn(2) || v == std::numeric_limits<int64_t>::min() ? 0 : -v;
      d = Dim::known(v);
      break;
    }
  }
}

void mutateAttribute(Rng& r, Attribute& a) {
  switch (a.type) {
    case AttrType::kInt:
      a.i = interestingInt(r, a.i);
      break;
    case AttrType::kFloat:
      a.f = interestingFloat(r, a.f);
      break;
    case AttrType::kInts:
      if (a.ints.empty() || r.oneIn(4)) {
        a.ints.insert(a.ints.begin() + r.below(a.ints.size() + 1), interestingInt(r, 0));
      } else if (r.oneIn(4)) {
        a.ints.erase(a.ints.begin() + r.below(a.ints.size()));
      } else if (r.oneIn(6)) {
        a.ints.push_back(a.ints[r.below(a.ints.size())]);  // duplicates (axes, perm)
      } else {
        int64_t& v = a.ints[r.below(a.ints.size())];
        v = interestingInt(r, v);
      }
      break;
    case AttrType::kFloats:
      if (a.floats.empty() || r.oneIn(4)) {
        a.floats.push_back(interestingFloat(r, 1.0f));
      } else if (r.oneIn(4)) {
        a.floats.erase(a.floats.begin() + r.below(a.floats.size()));
      } else {
        float& v = a.floats[r.below(a.floats.size())];
        v = interestingFloat(r, v);
      }
      break;
    case AttrType::kString:
      a.s = r.pick(attrStrings());
      break;
    case AttrType::kTensor:
      mutateTensor(r, a.t);
      break;
    case AttrType::kStrings:
      if (!a.strings.empty() && r.oneIn(2))
        a.strings.pop_back();
      else
        a.strings.push_back(r.pick(attrStrings()));
      break;
    default:
      break;
  }
}

Attribute newAttribute(Rng& r) {
  const AttrName& an = r.pick(attrNames());
  Attribute a;
  a.name = an.name;
  a.type = an.type;
  switch (an.type) {
    case AttrType::kInts:
      for (size_t k = 0, m = r.below(5); k < m; ++k)
        a.ints.push_back(r.oneIn(2) ? static_cast<int64_t>(r.below(5)) - 1 : interestingInt(r, 0));
      break;
    case AttrType::kFloats:
      for (size_t k = 0, m = r.below(5); k < m; ++k)
        a.floats.push_back(interestingFloat(r, 1.0f));
      break;
    case AttrType::kTensor:
      a.t = remadeTensor(r, Tensor(), randomDataType(r), mutateDims(r, {}));
      break;
    default:
      mutateAttribute(r, a);
      break;
  }
  return a;
}

struct Site {
  Graph* graph;
  std::vector<Node*> nodes;
};

void collectGraphs(Graph& g, std::vector<Site>& out) {
  Site s{&g, {}};
  for (Node* n : g.nodes())
    s.nodes.push_back(n);
  out.push_back(std::move(s));
  for (Node* n : g.nodes())
    n->forEachSubgraph([&out](Graph& sub) { collectGraphs(sub, out); });
}

// Values a node at `pos` of `site` may use without a cycle: the graph's inputs and
// initializers and the outputs of the nodes before it.
std::vector<Value*> valuesBefore(const Site& site, size_t pos) {
  std::vector<Value*> v(site.graph->inputs().begin(), site.graph->inputs().end());
  for (Value* w : site.graph->initializers()) {
    if (!w->isGraphInput()) v.push_back(w);
  }
  for (size_t i = 0; i < pos && i < site.nodes.size(); ++i) {
    for (Value* o : site.nodes[i]->outputs()) {
      if (o != nullptr) v.push_back(o);
    }
  }
  return v;
}

// One structural change; false when it found nothing to change.
bool mutateModel(Rng& r, Model& m) {
  std::vector<Site> sites;
  collectGraphs(*m.graph, sites);
  for (Function& f : m.functions) {
    if (f.body) collectGraphs(*f.body, sites);
  }
  Site& site = sites[r.oneIn(4) ? r.below(sites.size()) : 0];
  Graph& g = *site.graph;
  const size_t pos = r.below(site.nodes.size());
  Node* node = site.nodes.empty() ? nullptr : site.nodes[pos];

  switch (r.below(14)) {
    case 0:
    case 1: {  // an attribute value
      if (node == nullptr || node->attributes.empty()) return false;
      mutateAttribute(r, node->attributes[r.below(node->attributes.size())]);
      return true;
    }
    case 2: {  // add, remove or duplicate an attribute
      if (node == nullptr) return false;
      const size_t k = r.below(8);
      if (k < 4 || node->attributes.empty()) {
        node->setAttr(newAttribute(r));
      } else if (k < 7) {
        node->attributes.erase(node->attributes.begin() + r.below(node->attributes.size()));
      } else {  // the reader rejects it: rarely
        const Attribute& a = node->attributes[r.below(node->attributes.size())];
        if (a.g || !a.graphs.empty()) return false;
        node->attributes.push_back(a.copyWithoutGraphs());
      }
      return true;
    }
    case 3: {  // another op
      if (node == nullptr || node->hasSubgraphs()) return false;
      node->op_type = r.pick(onnxOps());
      if (r.oneIn(8)) node->domain.clear();
      return true;
    }
    case 4:
    case 5: {  // rewire an input to another value (or omit it)
      if (node == nullptr) return false;
      const std::vector<Value*> vals = valuesBefore(site, pos);
      Value* v = vals.empty() || r.oneIn(10) ? nullptr : r.pick(vals);
      if (node->numInputs() == 0 || r.oneIn(5)) {
        if (v == nullptr) return false;
        node->addInput(GraphBuilder::key(), v);
      } else {
        node->setInput(GraphBuilder::key(), r.below(node->numInputs()), v);
      }
      return true;
    }
    case 6: {  // remove or duplicate an input
      if (node == nullptr || node->numInputs() == 0) return false;
      const size_t i = r.below(node->numInputs());
      if (r.oneIn(2))
        node->removeInput(GraphBuilder::key(), i);
      else
        node->addInput(GraphBuilder::key(), node->input(i));
      return true;
    }
    case 7:
    case 8: {  // an initializer's values, dims or type
      if (g.initializers().empty()) return false;
      Value* v = r.pick(g.initializers());
      mutateTensor(r, *v->initializer());
      if (r.oneIn(2)) {  // its declared type follows (or not)
        Shape s;
        for (int64_t d : v->initializer()->dims())
          s.dims.push_back(Dim::known(d));
        v->type = Type::tensor(v->initializer()->dtype(), s);
      }
      return true;
    }
    case 9: {  // a Constant's value
      for (size_t k = 0; k < site.nodes.size(); ++k) {
        Node* c = site.nodes[(pos + k) % site.nodes.size()];
        if (c->op_type == "Constant" && !c->attributes.empty()) {
          mutateAttribute(r, c->attributes[r.below(c->attributes.size())]);
          return true;
        }
      }
      return false;
    }
    case 10: {  // the declared type of an input, output or value_info entry
      std::vector<Value*> vals(g.inputs().begin(), g.inputs().end());
      vals.insert(vals.end(), g.outputs().begin(), g.outputs().end());
      for (Node* n : site.nodes) {
        for (Value* o : n->outputs()) {
          if (o != nullptr && o->in_value_info) vals.push_back(o);
        }
      }
      if (vals.empty()) return false;
      mutateShape(r, r.pick(vals)->type);
      return true;
    }
    case 11: {  // a new node at the end, its output a graph output
      const std::vector<Value*> vals = valuesBefore(site, site.nodes.size());
      std::vector<Value*> ins;
      for (size_t k = 0, count = vals.empty() ? 0 : 1 + r.below(3); k < count; ++k)
        ins.push_back(r.pick(vals));
      Node* added = g.addNode(GraphBuilder::key(), r.pick(onnxOps()), ins, 1 + r.below(2));
      for (size_t k = 0, count = r.below(3); k < count; ++k)
        added->setAttr(newAttribute(r));
      g.addOutput(GraphBuilder::key(), added->output(0));
      return true;
    }
    case 12: {  // the opset
      for (OpsetId& o : m.opset_import) {
        if (isDefaultDomain(o.domain)) {
          static const int64_t versions[] = {1,  6,  7,  9,  10, 11, 12, 13,
                                             14, 17, 18, 19, 21, 22, 23};
          o.version = versions[r.below(sizeof(versions) / sizeof(versions[0]))];
          return true;
        }
      }
      return false;
    }
    default: {  // bypass a node: its first output's uses read its first input
      if (node == nullptr || node->input(0) == nullptr || node->output(0) == nullptr ||
          node->output(0)->isGraphOutput())
        return false;
      node->output(0)->replaceAllUsesWith(GraphBuilder::key(), node->input(0));
      return true;
    }
  }
}

size_t structuredMutate(uint8_t* data, size_t size, size_t max_size, Rng& r) {
  std::unique_ptr<Model> m;
  try {
    m = readModel(exactCopy(data, size));
  } catch (const std::exception&) {
    return 0;
  }
  bool changed = false;
  for (size_t k = 0, n = 1 + r.below(3); k < n; ++k) {
    for (int tries = 0; tries < 8; ++tries) {
      if (mutateModel(r, *m)) {
        changed = true;
        break;
      }
    }
  }
  if (!changed) return 0;
  std::string out;
  try {
    out = writeModelToString(*m);
  } catch (const std::exception&) {
    return 0;
  }
  if (out.empty() || out.size() > max_size) return 0;
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  Rng r(seed);
  if (r.oneIn(2)) {
    if (const size_t n = structuredMutate(data, size, max_size, r)) return n;
  }
  return LLVMFuzzerMutate(data, size, max_size);
}
