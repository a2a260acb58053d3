// The op registry: for each (domain, op_type, since_version) one entry holding
// the type-and-shape rule and the CPU kernel.
//
// Like XNNPACK's reshape/setup split, inference and compute are separate:
// infer() gives every output a dtype and a shape (symbolic where inputs are
// symbolic) and, when it can, the output's content (Shape of a static input)
// or partly known content (shape arithmetic on a dynamic batch). compute()
// then writes into outputs that are already allocated with the shapes infer()
// produced, so kernels never allocate. When every input value is known,
// infer() must produce fully static output shapes.
//
// An entry applies from its since_version up to the next entry of the same op.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace onnxfold {

struct SubgraphEnv;       // kernels/subgraph_eval.h
struct AttributeDefault;  // schema/op_schema.h

// Contents of a small int64 tensor (rank 0 or 1) whose elements are each known
// or symbolic: the value of Shape(x) for x: [batch, 3] is {batch, 3}.
using SymbolicValue = std::vector<Dim>;

class OpContext {
 public:
  OpContext(const Node& node, int64_t opset) : node_(node), opset_(opset) {}
  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  std::string_view opType() const { return node_.op_type; }

  // The node's attribute, else its default in the op's schema at opset() (the spec's
  // "(default is X)"). Fails, naming the op, the attribute and the opset, when the node does
  // not have it and the schema gives no default: the attribute is required or has none, or
  // the op has no schema (contrib and ai.onnx.ml ops: read those with a default below).
  int64_t attrInt(std::string_view name) const;
  float attrFloat(std::string_view name) const;
  std::string attrString(std::string_view name) const;
  // The node's attribute, else `dflt`: for ops without a schema, attributes without a default
  // and defaults the changelog cannot give exactly (it prints floats rounded).
  int64_t attrInt(std::string_view name, int64_t dflt) const { return node_.attrInt(name, dflt); }
  float attrFloat(std::string_view name, float dflt) const { return node_.attrFloat(name, dflt); }
  std::string attrString(std::string_view name, std::string dflt) const {
    return node_.attrString(name, std::move(dflt));
  }
  std::vector<int64_t> attrInts(std::string_view name, std::vector<int64_t> dflt = {}) const {
    return node_.attrInts(name, std::move(dflt));
  }
  std::vector<float> attrFloats(std::string_view name, std::vector<float> dflt = {}) const;
  const Attribute* attr(std::string_view name) const { return node_.attr(name); }
  bool hasAttr(std::string_view name) const { return node_.attr(name) != nullptr; }

  // Throws Error("<op> '<node name>': <message>"): the inputs are invalid for this op.
  [[noreturn]] void fail(const std::string& message) const;
  // Throws UnsupportedError: valid, but this rule or kernel does not handle it.
  [[noreturn]] void unsupported(const std::string& message) const;
  // a * b and a + b of sizes, failing ("... overflows int64") instead of wrapping.
  int64_t sizeMul(int64_t a, int64_t b) const;
  int64_t sizeAdd(int64_t a, int64_t b) const;

 private:
  // The schema's default of attribute `name` of type `type`, failing when there is none.
  const AttributeDefault& schemaDefault(std::string_view name, AttrType type) const;

  const Node& node_;
  int64_t opset_;
};

class InferContext : public OpContext {
 public:
  InferContext(const Node& node, int64_t opset, size_t num_inputs, size_t num_outputs);

  // Inputs. Any of these may be absent: an omitted optional input has no type.
  size_t numInputs() const { return input_types.size(); }
  bool hasInput(size_t i) const { return i < input_types.size() && input_types[i] != nullptr; }
  const Type* inputType(size_t i) const {
    return i < input_types.size() ? input_types[i] : nullptr;
  }
  // Element type of tensor input i (kUndefined if unknown).
  DataType inputDtype(size_t i) const;
  // Shape of tensor input i, or null when its rank is unknown.
  const Shape* inputShape(size_t i) const;
  // Constant content of input i, or null.
  const Tensor* inputValue(size_t i) const {
    return i < input_values.size() ? input_values[i] : nullptr;
  }
  // Known-or-symbolic content of a small int64 input (also derived from inputValue).
  std::optional<SymbolicValue> inputSymbolic(size_t i) const;
  // True when all present inputs have constant content.
  bool allInputValuesKnown() const;

  // Outputs.
  size_t numOutputs() const { return output_types.size(); }
  void setOutput(size_t i, DataType dtype, Shape shape);
  void setOutput(size_t i, DataType dtype, const std::vector<int64_t>& dims);
  void setOutputUnknownRank(size_t i, DataType dtype);
  void setOutputType(size_t i, Type type) { output_types.at(i) = std::move(type); }
  void setOutputValue(size_t i, Tensor t);
  void setOutputSymbolic(size_t i, SymbolicValue v) { output_symbolic.at(i) = std::move(v); }
  // A fresh symbol for a dim nothing can know statically (e.g. NonZero's count).
  Dim newSymbol();

  // Filled by the caller.
  std::vector<const Type*> input_types;
  std::vector<const Tensor*> input_values;
  std::vector<const SymbolicValue*> input_symbolic;
  // Filled by infer().
  std::vector<Type> output_types;
  std::vector<std::optional<Tensor>> output_values;
  std::vector<std::optional<SymbolicValue>> output_symbolic;
  int* symbol_counter = nullptr;
};

class ComputeContext : public OpContext {
 public:
  ComputeContext(const Node& node, int64_t opset) : OpContext(node, opset) {}
  size_t numInputs() const { return inputs.size(); }
  bool hasInput(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  const Tensor& input(size_t i) const;  // throws if absent
  size_t numOutputs() const { return outputs.size(); }
  bool hasOutput(size_t i) const { return i < outputs.size() && outputs[i] != nullptr; }
  Tensor& output(size_t i) const;  // preallocated with the inferred dtype and shape

  // 16-byte aligned data (unless the op is kOpUnalignedInputs); null for omitted inputs
  std::vector<const Tensor*> inputs;
  std::vector<Tensor*> outputs;  // null for omitted outputs
  // What an op evaluating its graph attributes (kOpEvaluatesSubgraphs) needs beyond its inputs:
  // the model's opsets and the captured values. Null when the caller gives none.
  const SubgraphEnv* subgraph_env = nullptr;
};

using InferFn = void (*)(InferContext&);
using ComputeFn = void (*)(ComputeContext&);

enum OpFlags : uint32_t {
  kOpDefault = 0,
  kOpNondeterministic = 1u << 0,  // never folded (RandomNormal, Bernoulli, ...)
  // The kernel writes every byte of its outputs, so they need not be zeroed first
  // (zeroing touched every page of a large output twice).
  kOpWritesWholeOutputs = 1u << 1,
  // The kernel reads its inputs through memcpy, so a weight viewed in the model's
  // bytes at any offset is used as it is (no aligned copy first).
  kOpUnalignedInputs = 1u << 2,
  // The kernel evaluates the node's graph attributes itself (FlexAttention's score_mod), so
  // the node folds like any other instead of being left as control flow.
  kOpEvaluatesSubgraphs = 1u << 3,
  // The kernel gives its outputs their dtype and shape (Loop's are known only once it has
  // run): they are handed to compute() empty.
  kOpSizesOutputs = 1u << 4,
};

struct OpEntry {
  std::string_view domain;  // "" for the default ONNX domain
  std::string_view op_type;
  int since_version;
  InferFn infer;
  ComputeFn compute;  // null: inference only
  uint32_t flags = kOpDefault;
};

class OpRegistry {
 public:
  static const OpRegistry& instance();
  // The entry in force for `op_type` at `opset` of `domain`, or null.
  const OpEntry* find(std::string_view domain, std::string_view op_type, int64_t opset) const;
  // Every entry, for listings and tests.
  const std::vector<OpEntry>& entries() const { return entries_; }

  void add(const OpEntry& e) { entries_.push_back(e); }

 private:
  OpRegistry();
  std::vector<OpEntry> entries_;
  // Entry indices by op type, made once the registry is complete: find() runs for every node
  // of every inference round, and a scan of all entries was a sixth of a wasm optimize run.
  std::unordered_map<std::string_view, std::vector<uint32_t>> by_type_;
};

// One registration function per op family file (kernels/<family>.cpp).
void registerUnaryMathOps(OpRegistry& r);   // unary_math.cpp: Abs, Exp, ..., Not, IsNaN, IsInf
void registerActivationOps(OpRegistry& r);  // activations.cpp: Relu, PRelu, Sigmoid, Gelu, ...
void registerSwiGLUOps(OpRegistry& r);      // swiglu.cpp: SwiGLU
void registerBinaryOps(OpRegistry& r);      // binary.cpp: arithmetic, logic, compare, Max/Sum, ...
void registerWhereClipDropoutOps(OpRegistry& r);  // where_clip_dropout.cpp: Where, Clip, Dropout
void registerCastOps(OpRegistry& r);              // cast.cpp: Cast, CastLike, BitCast
void registerQuantizeOps(OpRegistry& r);  // quantize.cpp: (De)QuantizeLinear, DynamicQuantizeLinear
void registerReduceOps(OpRegistry& r);    // reduce.cpp: Reduce*, softmax family
void registerMatmulOps(OpRegistry& r);    // matmul.cpp: MatMul, Gemm
void registerQuantizedLinearOps(OpRegistry& r);  // quantized_linear.cpp: *Integer, QLinear*
void registerConvOps(OpRegistry& r);             // conv.cpp: Conv, DeformConv, CausalConvWithState
void registerConvTransposeOps(OpRegistry& r);    // conv_transpose.cpp: ConvTranspose, Col2Im
void registerPoolOps(OpRegistry& r);         // pool.cpp: Average/Max/LpPool, Global*Pool, MaxUnpool
void registerEinsumOps(OpRegistry& r);       // einsum.cpp: Einsum
void registerReshapeOps(OpRegistry& r);      // reshape.cpp: Reshape, Flatten, (Un)Squeeze
void registerTransposeOps(OpRegistry& r);    // transpose.cpp: Transpose, DepthToSpace, Trilu, ...
void registerConcatSplitOps(OpRegistry& r);  // concat_split.cpp: Concat, Split
void registerPadTileOps(OpRegistry& r);      // pad_tile.cpp: Expand, Tile, Pad, Upsample, ...
void registerGatherSliceOps(OpRegistry& r);  // gather_slice.cpp: Gather, GatherElements/ND, Slice
void registerScatterOps(OpRegistry& r);      // scatter.cpp: Scatter*, TensorScatter
void registerSortingOps(OpRegistry& r);      // sorting.cpp: TopK, Unique, ArgMax, ArgMin
void registerIndexingOps(OpRegistry& r);     // indexing.cpp: OneHot, Compress, NonZero, CumSum, ...
void registerNormalizationOps(OpRegistry& r);  // normalization.cpp: BatchNorm, LayerNorm, ...
void registerShapeOps(OpRegistry& r);        // shape.cpp: Shape, Size, ConstantOfShape, Range, ...
void registerAttentionOps(OpRegistry& r);    // attention.cpp: Attention, RotaryEmbedding, ...
void registerResizeOps(OpRegistry& r);       // resize.cpp: Resize
void registerGridSampleOps(OpRegistry& r);   // grid_sample.cpp: GridSample, AffineGrid
void registerDetectionOps(OpRegistry& r);    // detection.cpp: RoiAlign, MaxRoiPool, NMS
void registerRecurrentOps(OpRegistry& r);    // recurrent.cpp: RNN, LSTM, GRU
void registerSignalOps(OpRegistry& r);       // signal.cpp: DFT, STFT, window functions, ...
void registerControlFlowOps(OpRegistry& r);  // control_flow.cpp: If, Loop, Scan
void registerSequenceOps(OpRegistry& r);     // sequence.cpp: Sequence*, Optional*
void registerLossOps(OpRegistry& r);         // losses.cpp: NegativeLogLikelihoodLoss, SCE loss
void registerDetOps(OpRegistry& r);          // det.cpp: Det
void registerRandomOps(OpRegistry& r);       // random.cpp: Random*, Bernoulli, ... (rules only)
void registerStringOps(OpRegistry& r);       // strings.cpp: StringSplit, ..., TfIdfVectorizer
void registerImageCodecOps(OpRegistry& r);   // image_codec.cpp: ImageDecoder
void registerMlOps(OpRegistry& r);           // ml.cpp: ai.onnx.ml LabelEncoder, TreeEnsemble, ...
void registerTrainingOps(OpRegistry& r);     // training.cpp: ai.onnx.preview.training optimizers
void registerFlexAttentionOps(OpRegistry& r);  // flex_attention.cpp: ai.onnx.preview

// The static tensor type infer() gives output `output` of `node` on these inputs, reading the
// values of inputs of at most `max_value_elements` only; nullopt when it gives none, or when
// the rule computes the value itself. The type evaluateNode's output will have.
std::optional<Type> inferOutputType(const Node& node, int64_t opset,
                                    const std::vector<const Tensor*>& inputs, size_t output,
                                    int64_t max_value_elements);

// Runs infer() then compute() on constant inputs; returns the outputs (null
// entries for omitted outputs stay default-constructed). Throws Error when
// the op has no entry or kernel at this opset, or when the inputs are invalid.
// `env` is handed to kernels that evaluate subgraphs (kOpEvaluatesSubgraphs).
std::vector<Tensor> evaluateNode(const Node& node, int64_t opset,
                                 const std::vector<const Tensor*>& inputs,
                                 const SubgraphEnv* env = nullptr);

}  // namespace onnxfold
