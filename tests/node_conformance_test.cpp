// ONNX backend node tests (shared/onnx-tests/node) as the conformance suite of
// constant folding and of type/shape inference.
//
// fold:  every graph input becomes a constant initializer, the fold-constants
//        pass runs, and every graph output must then be a constant equal to the
//        expected output_K.pb (exact for integers, bool and strings; floats
//        within rtol 1e-3, atol 1e-7 as ONNX's backend runner; NaN equals NaN).
//        Tests of nondeterministic ops pass when their outputs stay unfolded.
// infer: on the model as given, with declared intermediate/output types
//        dropped, the infer-shapes pass must give each output the expected
//        dtype and rank, and every dim it infers as a number must be right; a
//        symbolic dim is accepted (it stands for a size that depends on input
//        values, which this check does not have). The count of fully static
//        matches is printed too.
//
// tests/conformance/node_expected_{fold,infer}_failures.txt name each test
// expected to fail, with the reason. The test fails when an unlisted test
// fails and when a listed one passes, so the lists only shrink.
//
// Environment:
//   ONNXFOLD_CONFORMANCE_FILTER=substr   run only tests whose name contains substr
//   ONNXFOLD_CONFORMANCE_WRITE=dir       write the current failures as the two lists into dir
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <protozero/pbf_reader.hpp>
#include <set>
#include <sstream>

#include "api/file_io.h"
#include "ir/printer.h"
#include "kernels/common.h"
#include "kernels/op_registry.h"
#include "onnx/reader.h"
#include "passes/registry.h"
#include "passes/rewrite.h"
#include "passes/structured_values.h"
#include "test_util.h"

namespace onnxfold {
namespace {

namespace fs = std::filesystem;

std::string listPath(const std::string& kind) {
  return std::string(ONNXFOLD_SOURCE_DIR) + "/tests/conformance/node_expected_" + kind +
         "_failures.txt";
}

std::map<std::string, std::string> readExpectedFailures(const std::string& kind) {
  std::map<std::string, std::string> out;
  std::ifstream in(listPath(kind));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sep = line.find(' ');
    const std::string name = line.substr(0, sep);
    std::string reason = sep == std::string::npos ? "" : line.substr(sep + 1);
    const size_t hash = reason.find("# ");
    if (hash != std::string::npos) reason = reason.substr(hash + 2);
    out[name] = reason;
  }
  return out;
}

// Compares one output; returns "" when equal, else what differs.
std::string compareTensors(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype()) {
    return "dtype " + std::string(dataTypeName(got.dtype())) + ", expected " +
           std::string(dataTypeName(want.dtype()));
  }
  if (got.dims() != want.dims()) {
    auto str = [](const std::vector<int64_t>& d) {
      std::string s = "[";
      for (size_t i = 0; i < d.size(); ++i)
        s += (i ? "," : "") + std::to_string(d[i]);
      return s + "]";
    };
    return "shape " + str(got.dims()) + ", expected " + str(want.dims());
  }
  if (got.dtype() == DataType::kString)
    return got.strings() == want.strings() ? "" : "strings differ";
  const auto n = static_cast<size_t>(got.numElements());
  std::string problem;
  const bool numeric = kernels::dispatchNumeric(got.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < n && problem.empty(); ++i) {
      const T a = got.at<T>(i);
      const T b = want.at<T>(i);
      if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, kernels::Half> ||
                    std::is_same_v<T, kernels::BFloat16>) {
        const double x = kernels::toDouble(a), y = kernels::toDouble(b);
        if (std::isnan(x) && std::isnan(y)) continue;
        if (std::isinf(x) || std::isinf(y) ? x == y
                                           : std::fabs(x - y) <= 1e-7 + 1e-3 * std::fabs(y)) {
          continue;
        }
        std::ostringstream os;
        os << "element " << i << " is " << x << ", expected " << y;
        problem = os.str();
      } else {
        if (std::memcmp(&a, &b, sizeof(T)) == 0) continue;
        std::ostringstream os;
        os << "element " << i << " is " << kernels::toDouble(a) << ", expected "
           << kernels::toDouble(b);
        problem = os.str();
      }
    }
  });
  if (!numeric) {
    // Other types (float8, 4-bit, complex): compare bytes.
    if (got.byteSize() != want.byteSize() ||
        std::memcmp(got.bytes(), want.bytes(), got.byteSize()) != 0) {
      return "bytes differ";
    }
  }
  return problem;
}

bool isNondeterministic(const Graph& g) {
  for (const Node* n : g.nodes()) {
    for (const char* op : {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
                           "Bernoulli", "Multinomial"}) {
      if (n->op_type == op) return true;
    }
  }
  return false;
}

using test::bindInput;

// A test's value file as a `type`: a TensorProto, or a SequenceProto / OptionalProto of
// tensors (read here with protozero: onnxfold never reads them from models).
Tensor readValue(const Buffer& bytes, const Type& type) {
  if (type.kind == Type::Kind::kTensor || type.kind == Type::Kind::kNone) {
    return readTensorProto(bytes);
  }
  const bool sequence = type.kind == Type::Kind::kSequence;
  if (!sequence && type.kind != Type::Kind::kOptional) throw Error("a map value");
  const Type inner = type.elem ? *type.elem : Type();
  std::vector<Tensor> elements;
  std::optional<Tensor> held;
  protozero::pbf_reader r(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  while (r.next()) {
    switch (r.tag()) {
      case 3: {  // tensor_values / tensor_value
        const protozero::data_view d = r.get_view();
        Tensor t = readTensorProto(test::bufferOf(std::string(d.data(), d.size())));
        if (sequence)
          elements.push_back(std::move(t));
        else
          held = std::move(t);
        break;
      }
      case 5: {  // sequence_values (not read) / sequence_value
        const protozero::data_view d = r.get_view();
        if (sequence) throw Error("a sequence of sequences");
        held = readValue(test::bufferOf(std::string(d.data(), d.size())), inner);
        break;
      }
      case 4:
      case 6:
      case 7:
        throw Error("a sparse, map or nested optional value");
      default:
        r.skip();
    }
  }
  if (!sequence) return held ? std::move(*held) : Tensor::none();
  const DataType dt = !elements.empty() ? elements[0].dtype() : inner.elem_type;
  return Tensor::sequence(dt, std::move(elements));
}

// Graph input `v` becomes `value`: an initializer, or the nodes that build a sequence or an
// optional from constants.
void bindValue(Model& m, Value* v, Tensor value) {
  Graph& g = *m.graph;
  if (value.isPlain() && v->type.kind != Type::Kind::kOptional) {
    bindInput(g, v, std::move(value));
    return;
  }
  if (!canBuildStructure(v->type, value)) throw Error("cannot build this sequence or optional");
  Rewriter rw(m, g, /*notify=*/false);
  const std::string name = v->name();
  Value* built = buildStructure(rw, g.firstNode(), v->type, value, name + "__data");
  g.replaceValue(GraphBuilder::key(), v, built);
  g.removeInput(GraphBuilder::key(), v);
  built->setName(name);
}

// The value a graph output holds after folding, when it is known: an initializer, or a
// sequence or optional built from constants (the canonical form of structured_values.h).
std::optional<Tensor> foldedValue(const Value* out) {
  if (out->isConstant()) return *out->initializer();
  const Node* p = out->producer();
  if (p == nullptr || !isCanonicalStructure(*p)) return std::nullopt;
  if (p->isOp("SequenceEmpty")) {
    return Tensor::sequence(static_cast<DataType>(p->attrInt("dtype", 1)), {});
  }
  if (p->isOp("SequenceConstruct")) {
    std::vector<Tensor> e;
    for (const Value* x : p->inputs())
      e.push_back(*x->initializer());
    const DataType dt = e.at(0).dtype();  // before e is moved from
    return Tensor::sequence(dt, std::move(e));
  }
  if (p->numInputs() == 0 || p->input(0) == nullptr) return Tensor::none();  // Optional()
  return foldedValue(p->input(0));
}

std::string compareValues(const Tensor& got, const Tensor& want) {
  if (got.kind() != want.kind()) return "a different kind of value (sequence, optional, tensor)";
  if (got.kind() == Tensor::Kind::kNone) return "";
  if (got.kind() == Tensor::Kind::kPlain) return compareTensors(got, want);
  if (got.elements().size() != want.elements().size()) {
    return std::to_string(got.elements().size()) + " elements, expected " +
           std::to_string(want.elements().size());
  }
  for (size_t i = 0; i < got.elements().size(); ++i) {
    if (std::string d = compareTensors(got.elements()[i], want.elements()[i]); !d.empty())
      return "element " + std::to_string(i) + ": " + d;
  }
  return "";
}

// The kind of value a type holds, for the inference check.
bool sameKind(const Type& inferred, const Tensor& want) {
  if (inferred.kind == Type::Kind::kOptional && inferred.elem && want.kind() != Tensor::Kind::kNone)
    return want.isPlain() ? inferred.elem->kind == Type::Kind::kTensor
                          : sameKind(*inferred.elem, want);
  if (want.kind() == Tensor::Kind::kSequence) {
    return inferred.kind == Type::Kind::kSequence && inferred.elem &&
           inferred.elem->elem_type == want.dtype();
  }
  return inferred.kind == Type::Kind::kOptional;
}

std::string shapeStr(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i)
    s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

struct NodeTestResult {
  std::string fold;          // "" when folding gives the expected outputs
  std::string infer;         // "" when inferred output types and shapes match
  bool infer_static = true;  // and every dim was inferred as a number
};

// Runs one test folder: folding with every input made constant, and type and
// shape inference on the model as given.
NodeTestResult runNodeTest(const fs::path& dir) {
  NodeTestResult result;
  std::unique_ptr<Model> original;
  try {
    original = readModel(readFileBuffer((dir / "model.onnx").string()));
  } catch (const std::exception& e) {
    result.fold = result.infer = std::string("cannot read model: ") + e.what();
    return result;
  }
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) {
      sets.push_back(e.path());
    }
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) {
    result.fold = result.infer = "no test data";
    return result;
  }
  std::vector<Tensor> expected;
  try {
    for (size_t k = 0; k < original->graph->outputs().size(); ++k) {
      expected.push_back(
          readValue(readFileBuffer((sets[0] / ("output_" + std::to_string(k) + ".pb")).string()),
                    original->graph->outputs()[k]->type));
    }
  } catch (const std::exception& e) {
    result.fold = result.infer = std::string("expected output cannot be read: ") + e.what();
    return result;
  }

  // Inference: forget every declared type except the graph inputs', then propagate.
  {
    std::unique_ptr<Model> m = original->clone();
    forEachGraph(*m, [](Graph& g) {
      for (Node* n : g.nodes()) {
        for (Value* v : n->outputs()) {
          if (v != nullptr) v->type = Type();
        }
      }
    });
    PassOptions po;
    PassContext ctx(po);
    std::unique_ptr<Pass> infer = createPass("infer-shapes");
    try {
      infer->run(*m, ctx);
    } catch (const std::exception& e) {
      result.infer = e.what();
    }
    for (size_t k = 0; k < expected.size() && result.infer.empty(); ++k) {
      const Type& t = m->graph->outputs()[k]->type;
      const std::string label = "output " + std::to_string(k) + ": ";
      if (!expected[k].isPlain() ||
          original->graph->outputs()[k]->type.kind == Type::Kind::kOptional) {
        if (!sameKind(t, expected[k])) result.infer = label + "inferred " + toString(t);
        continue;
      }
      if (t.kind != Type::Kind::kTensor) {
        result.infer = label + "no tensor type inferred";
      } else if (t.elem_type != expected[k].dtype()) {
        result.infer = label + "inferred " + std::string(dataTypeName(t.elem_type)) +
                       ", expected " + std::string(dataTypeName(expected[k].dtype()));
      } else if (!t.shape) {
        result.infer = label + "rank not inferred (" + toString(t) + ")";
      } else if (t.shape->rank() != expected[k].rank()) {
        result.infer = label + "inferred " + toString(t) + ", expected rank " +
                       std::to_string(expected[k].rank()) + " " + shapeStr(expected[k].dims());
      } else {
        // A symbolic dim matches: it stands for a size that depends on input values
        // this check does not have. A known dim must be right.
        for (size_t d = 0; d < t.shape->rank(); ++d) {
          const Dim& dim = t.shape->dims[d];
          if (dim.isKnown() && dim.value != expected[k].dims()[d]) {
            result.infer =
                label + "inferred " + toString(t) + ", expected " + shapeStr(expected[k].dims());
            break;
          }
          if (!dim.isKnown()) result.infer_static = false;
        }
      }
    }
  }

  const bool random = isNondeterministic(*original->graph);
  for (const fs::path& set : sets) {
    std::unique_ptr<Model> m = original->clone();
    Graph& g = *m->graph;
    std::vector<Value*> inputs;
    for (Value* v : g.inputs()) {
      if (!v->isInitializer()) inputs.push_back(v);
    }
    try {
      for (size_t k = 0; k < inputs.size(); ++k) {
        const fs::path f = set / ("input_" + std::to_string(k) + ".pb");
        if (!fs::exists(f)) continue;  // an omitted optional input
        bindValue(*m, inputs[k], readValue(readFileBuffer(f.string()), inputs[k]->type));
      }
    } catch (const std::exception& e) {
      result.fold = std::string("input data cannot be bound: ") + e.what();
      return result;
    }
    PassOptions po;
    po.size_budget = int64_t{1} << 40;  // test outputs may be larger than their inputs
    po.constructor_budget = po.size_budget;
    po.fold_dequantize_weights = true;  // the inputs are data here, not weights to protect
    PassContext ctx(po);
    try {
      createPass("fold-constants")->run(*m, ctx);
    } catch (const std::exception& e) {
      result.fold = std::string("folding threw: ") + e.what();
      return result;
    }
    const std::vector<Explanation> why = ctx.takeExplanations();
    for (size_t k = 0; k < g.outputs().size(); ++k) {
      const Value* out = g.outputs()[k];
      if (random) {
        if (out->isConstant()) result.fold = "a nondeterministic output was folded";
        continue;
      }
      bool said_random = false;
      for (const Explanation& e : why)
        said_random |= e.reason.rfind("nondeterministic", 0) == 0;
      if (!out->isConstant() && said_random) continue;  // random (training Dropout): must stay
      const std::optional<Tensor> got = foldedValue(out);
      if (!got) {
        result.fold = "output " + std::to_string(k) + " '" + out->name() + "' was not folded";
        for (const Explanation& e : why)
          result.fold += "; " + e.op_type + ": " + e.reason;
        return result;
      }
      Tensor want;
      try {
        want = readValue(readFileBuffer((set / ("output_" + std::to_string(k) + ".pb")).string()),
                         original->graph->outputs()[k]->type);
      } catch (const std::exception& e) {
        result.fold = std::string("expected output cannot be read: ") + e.what();
        return result;
      }
      const std::string diff = compareValues(*got, want);
      if (!diff.empty()) {
        result.fold = "output " + std::to_string(k) + " '" + out->name() + "': " + diff;
        return result;
      }
    }
  }
  return result;
}

// One list per check: "fold" (values) and "infer" (types and shapes).
struct Tally {
  Tally(std::string k, std::map<std::string, std::string> e)
      : kind(std::move(k)), expected(std::move(e)) {}
  std::string kind;
  std::map<std::string, std::string> expected;
  size_t passed = 0, failed = 0, unexpected = 0, fixed = 0;
  std::ostringstream list;

  void add(const std::string& name, const std::string& problem) {
    const bool listed = expected.count(name) > 0;
    if (problem.empty()) {
      ++passed;
      if (listed) {
        ++fixed;
        ADD_FAILURE() << name << " (" << kind << ") passes now: remove it from " << listPath(kind);
      }
      return;
    }
    ++failed;
    std::string oneline = problem.substr(0, 240);
    std::replace(oneline.begin(), oneline.end(), '\n', ' ');
    list << name << " # " << oneline << "\n";
    if (!listed) {
      ++unexpected;
      ADD_FAILURE() << name << " (" << kind << ") fails: " << problem;
    }
  }

  void print() const {
    std::printf(
        "node conformance (%s): %zu passed, %zu failed of %zu (%zu not in the expected "
        "list, %zu listed but passing)\n",
        kind.c_str(), passed, failed, passed + failed, unexpected, fixed);
  }

  // Into `path`/node_expected_<kind>_failures.txt when `path` is a folder, else appended to the
  // file.
  void write(const std::string& path) const {
    const bool dir = fs::is_directory(path);
    std::ofstream f(dir ? path + "/node_expected_" + kind + "_failures.txt" : path,
                    dir ? std::ios::trunc : std::ios::app);
    f << "# ONNX node tests expected to fail the '" << kind << "' check, with the reason.\n"
      << "# Regenerate: ONNXFOLD_CONFORMANCE_WRITE=tests/conformance onnxfold_tests "
         "--gtest_filter='NodeConformance.*'\n"
      << list.str();
  }
};

TEST(NodeConformance, MatchesExpectedFailureLists) {
  ONNXFOLD_REQUIRE_SHARED();
  const std::string root = test::sharedPath("onnx-tests/node");
  if (root.empty()) GTEST_SKIP() << "shared/onnx-tests/node is missing";
  const char* filter = std::getenv("ONNXFOLD_CONFORMANCE_FILTER");
  Tally fold{"fold", readExpectedFailures("fold")};
  Tally infer{"infer", readExpectedFailures("infer")};
  size_t infer_static = 0;

  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root)) {
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& dir : dirs) {
    const std::string name = dir.filename().string();
    if (filter != nullptr && name.find(filter) == std::string::npos) continue;
    const NodeTestResult r = runNodeTest(dir);
    fold.add(name, r.fold);
    infer.add(name, r.infer);
    infer_static += r.infer.empty() && r.infer_static;
  }
  fold.print();
  infer.print();
  std::printf(
      "node conformance (infer): %zu of the matching outputs fully static, %zu with symbolic "
      "dims where sizes depend on input values\n",
      infer_static, infer.passed - infer_static);
  if (const char* out = std::getenv("ONNXFOLD_CONFORMANCE_WRITE")) {
    if (!fs::is_directory(out)) std::ofstream(out, std::ios::trunc);
    fold.write(out);
    infer.write(out);
  }
}

}  // namespace
}  // namespace onnxfold
