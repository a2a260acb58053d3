// ml op family: the ai.onnx.ml ops the node tests use: LabelEncoder,
// ArrayFeatureExtractor, Binarizer and TreeEnsemble. See op_registry.h for
// the infer()/compute() contract. Float math is done in double and rounded
// once.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/common.h"
#include "kernels/eval_budget.h"
#include "kernels/float_math.h"
#include "kernels/op_helpers.h"

namespace onnxfold {
namespace kernels {
namespace {

// LabelEncoder keys are compared through a canonical string form of the
// element: exact for strings and integers, bitwise for floats (NaN equals NaN).
std::string keyOf(DataType t, const Tensor& src, size_t i) {
  switch (t) {
    case DataType::kString:
      return "s" + src.strings()[i];
    case DataType::kFloat:
    case DataType::kDouble: {
      double d = t == DataType::kFloat ? src.at<float>(i) : src.at<double>(i);
      if (std::isnan(d)) return "fnan";
      if (d == 0) d = 0;  // -0 == 0
      std::string k = "f";
      k.append(reinterpret_cast<const char*>(&d), sizeof d);
      return k;
    }
    default: {
      int64_t v = 0;
      dispatchNumeric(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_integral_v<T>) v = static_cast<int64_t>(src.at<T>(i));
      });
      return "i" + std::to_string(v);
    }
  }
}

struct LabelEncoderSpec {
  Tensor keys;    // any supported dtype
  Tensor values;  // output dtype
  Tensor dflt;    // one element of the output dtype
};

template <class T>
Tensor vectorTensor(DataType t, const std::vector<T>& v) {
  Tensor out(t, {static_cast<int64_t>(v.size())});
  if constexpr (std::is_same_v<T, std::string>) {
    out.mutableStrings() = v;
  } else {
    if (!v.empty()) std::memcpy(out.mutableBytes(), v.data(), v.size() * sizeof(T));
  }
  return out;
}

LabelEncoderSpec labelEncoderSpec(const OpContext& ctx, DataType input_type) {
  LabelEncoderSpec s;
  const int64_t v = ctx.opset();
  if (v < 2) {
    // Opset 1: classes_strings maps string <-> index.
    const std::vector<std::string> classes = attrStrings(ctx, "classes_strings");
    std::vector<int64_t> idx(classes.size());
    for (size_t i = 0; i < idx.size(); ++i)
      idx[i] = static_cast<int64_t>(i);
    const Tensor ct = vectorTensor(DataType::kString, classes);
    const Tensor it = vectorTensor(DataType::kInt64, idx);
    if (input_type == DataType::kInt64) {
      s.keys = it;
      s.values = ct;
      s.dflt = vectorTensor(DataType::kString,
                            std::vector<std::string>{ctx.attrString("default_string", "_Unused")});
    } else {
      s.keys = ct;
      s.values = it;
      s.dflt =
          vectorTensor(DataType::kInt64, std::vector<int64_t>{ctx.attrInt("default_int64", -1)});
    }
    return s;
  }
  if (const Tensor* t = attrTensor(ctx, "keys_tensor")) {
    s.keys = *t;
  } else if (ctx.hasAttr("keys_strings")) {
    s.keys = vectorTensor(DataType::kString, attrStrings(ctx, "keys_strings"));
  } else if (ctx.hasAttr("keys_int64s")) {
    s.keys = vectorTensor(DataType::kInt64, ctx.attrInts("keys_int64s"));
  } else if (ctx.hasAttr("keys_floats")) {
    s.keys = vectorTensor(DataType::kFloat, ctx.attrFloats("keys_floats"));
  } else {
    ctx.fail("one of keys_strings, keys_int64s, keys_floats, keys_tensor is required");
  }
  if (const Tensor* t = attrTensor(ctx, "values_tensor")) {
    s.values = *t;
  } else if (ctx.hasAttr("values_strings")) {
    s.values = vectorTensor(DataType::kString, attrStrings(ctx, "values_strings"));
  } else if (ctx.hasAttr("values_int64s")) {
    s.values = vectorTensor(DataType::kInt64, ctx.attrInts("values_int64s"));
  } else if (ctx.hasAttr("values_floats")) {
    s.values = vectorTensor(DataType::kFloat, ctx.attrFloats("values_floats"));
  } else {
    ctx.fail("one of values_strings, values_int64s, values_floats, values_tensor is required");
  }
  if (s.keys.numElements() != s.values.numElements()) {
    ctx.fail("keys and values must have the same number of elements");
  }
  // The keys are of the input's type (ONNX Runtime refuses the node otherwise).
  if (input_type != DataType::kUndefined && s.keys.dtype() != input_type) {
    ctx.fail("keys are " + std::string(dataTypeName(s.keys.dtype())) + " but the input is " +
             std::string(dataTypeName(input_type)));
  }
  const DataType vt = s.values.dtype();
  if (const Tensor* t = attrTensor(ctx, "default_tensor")) {
    if (t->dtype() != vt || t->numElements() != 1) {
      ctx.fail("default_tensor must hold one element of the values' type");
    }
    s.dflt = *t;
  } else if (vt == DataType::kString) {
    s.dflt =
        vectorTensor(vt, std::vector<std::string>{ctx.attrString("default_string", "_Unused")});
  } else {
    Tensor d(vt, {1});
    if (vt == DataType::kFloat || vt == DataType::kDouble) {
      writeAll(d, {static_cast<double>(ctx.attrFloat("default_float", -0.0f))});
    } else {
      writeAll(d, {static_cast<double>(ctx.attrInt("default_int64", -1))});
    }
    s.dflt = d;
  }
  return s;
}

void inferLabelEncoder(InferContext& ctx) {
  const LabelEncoderSpec s = labelEncoderSpec(ctx, ctx.inputDtype(0));
  setSameShape(ctx, 0, s.values.dtype(), 0);
}

void computeLabelEncoder(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const LabelEncoderSpec s = labelEncoderSpec(ctx, x.dtype());
  std::unordered_map<std::string, size_t> map;
  for (size_t i = 0; i < static_cast<size_t>(s.keys.numElements()); ++i)
    map.emplace(keyOf(s.keys.dtype(), s.keys, i), i);
  Tensor& out = ctx.output(0);
  const DataType vt = s.values.dtype();
  const size_t n = static_cast<size_t>(x.numElements());
  const size_t esz = static_cast<size_t>(bitsPerElement(vt) / 8);
  for (size_t i = 0; i < n; ++i) {
    auto it = map.find(keyOf(x.dtype(), x, i));
    const Tensor& src = it == map.end() ? s.dflt : s.values;
    const size_t j = it == map.end() ? 0 : it->second;
    if (vt == DataType::kString) {
      out.mutableStrings()[i] = src.strings()[j];
    } else {
      std::memcpy(out.mutableBytes() + i * esz, src.bytes() + j * esz, esz);
    }
  }
}

void inferArrayFeatureExtractor(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  const Shape* x = ctx.inputShape(0);
  const Shape* y = ctx.inputShape(1);
  if (x == nullptr) {
    ctx.setOutputUnknownRank(0, t);
    return;
  }
  Dim count = ctx.newSymbol();
  if (y != nullptr) {
    int64_t n = 1;
    bool known = true;
    for (const Dim& d : y->dims) {
      known &= d.isKnown();
      if (d.isKnown() && !checkedMul(n, d.value, &n)) known = false;  // declared dims overflow
    }
    if (known) count = Dim::known(n);
  }
  Shape out;
  if (x->rank() <= 1) {
    out.dims = {Dim::known(1), count};
  } else {
    out = *x;
    out.dims.back() = count;
  }
  ctx.setOutput(0, t, std::move(out));
}

void computeArrayFeatureExtractor(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> idx = readInts(ctx, ctx.input(1));
  const int64_t stride = x.rank() == 0 ? 1 : x.dims().back();
  const int64_t rows = stride == 0 ? 0 : x.numElements() / stride;
  for (int64_t i : idx) {
    if (i < 0 || i >= stride) ctx.fail("index " + std::to_string(i) + " is out of range");
  }
  Tensor& out = ctx.output(0);
  const size_t k = idx.size();
  if (x.dtype() == DataType::kString) {
    for (int64_t r = 0; r < rows; ++r)
      for (size_t j = 0; j < k; ++j)
        out.mutableStrings()[static_cast<size_t>(r) * k + j] =
            x.strings()[static_cast<size_t>(r * stride + idx[j])];
    return;
  }
  const size_t esz = static_cast<size_t>(bitsPerElement(x.dtype()) / 8);
  for (int64_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < k; ++j)
      std::memcpy(out.mutableBytes() + (static_cast<size_t>(r) * k + j) * esz,
                  x.bytes() + static_cast<size_t>(r * stride + idx[j]) * esz, esz);
}

void inferSame(InferContext& ctx) {
  setSameShape(ctx, 0, ctx.inputDtype(0), 0);
}

void computeBinarizer(ComputeContext& ctx) {
  const double th = ctx.attrFloat("threshold", 0.0f);
  const std::vector<double> x = readAll(ctx.input(0));
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = x[i] > th ? 1.0 : 0.0;
  writeAll(ctx.output(0), y);
}

// TreeEnsemble (ai.onnx.ml 5): every tree from tree_roots walks its nodes to a
// leaf; leaf weights are aggregated per target, then post-transformed.
std::vector<int64_t> requiredInts(const OpContext& ctx, const char* name) {
  if (!ctx.hasAttr(name)) ctx.fail(std::string("attribute ") + name + " is required");
  return ctx.attrInts(name);
}

std::vector<double> tensorAttr(const OpContext& ctx, const char* name, bool required) {
  const Tensor* t = attrTensor(ctx, name);
  if (t == nullptr) {
    if (required) ctx.fail(std::string("attribute ") + name + " is required");
    return {};
  }
  return readAll(*t);
}

void inferTreeEnsemble(InferContext& ctx) {
  requireType(ctx, 0, isFloatType, "a float type");
  const DataType t = ctx.inputDtype(0);
  const int64_t targets = ctx.attrInt("n_targets", -1);
  if (targets < 1) ctx.fail("n_targets must be positive");
  const Shape* x = ctx.inputShape(0);
  Shape out;
  out.dims.push_back(x != nullptr && x->rank() >= 1 ? x->dims[0] : ctx.newSymbol());
  out.dims.push_back(Dim::known(targets));
  ctx.setOutput(0, t, std::move(out));
}

double erfInv(double y) {
  // Initial guess (Giles) refined by Newton steps on erf.
  if (y <= -1) return -std::numeric_limits<double>::infinity();
  if (y >= 1) return std::numeric_limits<double>::infinity();
  double w = -fm::log((1.0 - y) * (1.0 + y));
  double x;
  if (w < 5) {
    w -= 2.5;
    x = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941})
      x = c + x * w;
  } else {
    w = std::sqrt(w) - 3;
    x = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682})
      x = c + x * w;
  }
  x *= y;
  for (int i = 0; i < 2; ++i)
    x -= (fm::erf(x) - y) / (2 / std::sqrt(3.14159265358979323846) * fm::exp(-x * x));
  return x;
}

void computeTreeEnsemble(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const int64_t rows = X.rank() >= 1 ? X.dims()[0] : 1;
  const int64_t feats = X.rank() >= 2 ? product(X.dims(), 1, X.rank()) : 1;
  const std::vector<double> x = readAll(X);
  const int64_t targets = ctx.attrInt("n_targets", 1);
  const int64_t agg = ctx.attrInt("aggregate_function", 1);
  const int64_t post = ctx.attrInt("post_transform", 0);
  const std::vector<int64_t> roots = requiredInts(ctx, "tree_roots");
  const std::vector<int64_t> feature = requiredInts(ctx, "nodes_featureids");
  const std::vector<int64_t> true_id = requiredInts(ctx, "nodes_truenodeids");
  const std::vector<int64_t> false_id = requiredInts(ctx, "nodes_falsenodeids");
  const std::vector<int64_t> true_leaf = ctx.attrInts("nodes_trueleafs");
  const std::vector<int64_t> false_leaf = ctx.attrInts("nodes_falseleafs");
  const std::vector<int64_t> missing = ctx.attrInts("nodes_missing_value_tracks_true");
  const std::vector<double> splits = tensorAttr(ctx, "nodes_splits", true);
  const std::vector<double> membership = tensorAttr(ctx, "membership_values", false);
  const std::vector<int64_t> leaf_target = requiredInts(ctx, "leaf_targetids");
  const std::vector<double> leaf_weight = tensorAttr(ctx, "leaf_weights", true);
  std::vector<int64_t> modes(feature.size(), 0);
  if (const Tensor* m = attrTensor(ctx, "nodes_modes")) modes = readInts(ctx, *m);
  const size_t nn = feature.size();
  if (true_id.size() != nn || false_id.size() != nn || splits.size() != nn || modes.size() != nn ||
      (!true_leaf.empty() && true_leaf.size() != nn) ||
      (!false_leaf.empty() && false_leaf.size() != nn)) {
    ctx.fail("the nodes_* attributes must have the same length");
  }
  if (leaf_target.size() != leaf_weight.size()) ctx.fail("leaf_targetids and leaf_weights differ");
  // The BRANCH_MEMBER nodes take the NaN-separated sets of membership_values in order.
  std::vector<std::vector<double>> sets(nn);
  size_t mpos = 0;
  for (size_t i = 0; i < nn; ++i) {
    if (modes[i] != 6) continue;
    while (mpos < membership.size() && !std::isnan(membership[mpos]))
      sets[i].push_back(membership[mpos++]);
    ++mpos;  // the NaN separator
  }
  Tensor& out = ctx.output(0);
  std::vector<double> y(static_cast<size_t>(rows * targets), 0.0);
  const double init = agg == 2   ? std::numeric_limits<double>::infinity()
                      : agg == 3 ? -std::numeric_limits<double>::infinity()
                                 : 0.0;
  int64_t visits = 0;  // charged to the run's budget: a degenerate tree costs rows x depth
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> acc(static_cast<size_t>(targets), init);
    std::vector<bool> hit(static_cast<size_t>(targets), false);
    for (int64_t root : roots) {
      int64_t node = root;
      bool is_leaf = false;
      for (size_t guard = 0; !is_leaf; ++guard) {
        if (node < 0 || static_cast<size_t>(node) >= nn || guard > nn) ctx.fail("invalid tree");
        if (++visits == kVisitsPerStep) {
          EvalBudget::chargeSteps(1, "TreeEnsemble");
          visits = 0;
        }
        const auto n = static_cast<size_t>(node);
        if (feature[n] < 0 || feature[n] >= feats) ctx.fail("feature id out of range");
        const double v = x[static_cast<size_t>(r * feats + feature[n])];
        const double s = splits[n];
        bool go;
        if (std::isnan(v) && !missing.empty() && missing[n] != 0) {
          go = true;
        } else {
          switch (modes[n]) {
            case 0:
              go = v <= s;
              break;
            case 1:
              go = v < s;
              break;
            case 2:
              go = v >= s;
              break;
            case 3:
              go = v > s;
              break;
            case 4:
              go = v == s;
              break;
            case 5:
              go = v != s;
              break;
            case 6:
              go = std::find(sets[n].begin(), sets[n].end(), v) != sets[n].end();
              break;
            default:
              ctx.fail("invalid node mode " + std::to_string(modes[n]));
          }
        }
        node = go ? true_id[n] : false_id[n];
        is_leaf = go ? (!true_leaf.empty() && true_leaf[n] != 0)
                     : (!false_leaf.empty() && false_leaf[n] != 0);
      }
      if (node < 0 || static_cast<size_t>(node) >= leaf_weight.size()) ctx.fail("invalid leaf id");
      const int64_t tg = leaf_target[static_cast<size_t>(node)];
      if (tg < 0 || tg >= targets) ctx.fail("leaf target out of range");
      const double w = leaf_weight[static_cast<size_t>(node)];
      double& a = acc[static_cast<size_t>(tg)];
      hit[static_cast<size_t>(tg)] = true;
      if (agg == 2) {
        a = std::min(a, w);
      } else if (agg == 3) {
        a = std::max(a, w);
      } else {
        a += w;
      }
    }
    for (int64_t t = 0; t < targets; ++t) {
      double a = hit[static_cast<size_t>(t)] ? acc[static_cast<size_t>(t)] : 0.0;
      if (agg == 0 && !roots.empty()) a /= static_cast<double>(roots.size());
      acc[static_cast<size_t>(t)] = a;
    }
    if (post == 1 || post == 3) {
      double mx = -std::numeric_limits<double>::infinity();
      for (double a : acc)
        if (post == 1 || a != 0) mx = std::max(mx, a);
      double sum = 0;
      for (double& a : acc) {
        a = post == 3 && a == 0 ? 0.0 : fm::exp(a - mx);
        sum += a;
      }
      for (double& a : acc)
        a = sum > 0 ? a / sum : 0.0;
    } else if (post == 2) {
      for (double& a : acc)
        a = 1.0 / (1.0 + fm::exp(-a));
    } else if (post == 4) {
      for (double& a : acc)
        a = std::sqrt(2.0) * erfInv(2 * a - 1);
    } else if (post != 0) {
      ctx.fail("invalid post_transform");
    }
    std::copy(acc.begin(), acc.end(), y.begin() + r * targets);
  }
  writeAll(out, y);
}

}  // namespace
}  // namespace kernels

void registerMlOps(OpRegistry& r) {
  using namespace kernels;
  for (int v : {1, 2, 4})
    r.add({"ai.onnx.ml", "LabelEncoder", v, inferLabelEncoder, computeLabelEncoder});
  r.add({"ai.onnx.ml", "ArrayFeatureExtractor", 1, inferArrayFeatureExtractor,
         computeArrayFeatureExtractor});
  r.add({"ai.onnx.ml", "Binarizer", 1, inferSame, computeBinarizer});
  r.add({"ai.onnx.ml", "TreeEnsemble", 5, inferTreeEnsemble, computeTreeEnsemble});
}

}  // namespace onnxfold
