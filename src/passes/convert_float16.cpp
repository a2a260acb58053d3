// convert-float16: float32 weights and computation become float16, the usual step before
// shipping a model to a browser, with float32 islands where float16 overflows or loses
// precision and the graph's inputs and outputs kept float32.
//
// Before:  %y = MatMul(%x, %w: float32[64,64]); %z = Softmax(%y)     (%x, %z: the interface)
// After:   %x16 = Cast<to=10>(%x); %y = MatMul(%x16, %w: float16[64,64])
//          %y32 = Cast<to=1>(%y); %z = Softmax(%y32)
//
// Conditions (each float32 input and output of each node):
// - the block list (Softmax, Exp, Pow, Range, ...) and a value squared (Mul(x, x)) stay
//   float32, and so do reductions and elementwise steps that read only their results and
//   constants (the variance of a hand-written LayerNorm or RMSNorm, the sum of a softmax);
// - so do shape computations: the small values feeding a Cast to an integer type, Resize's
//   roi and scales;
// - a type constraint of the op's schema that admits no float16 keeps its values float32, as
//   do ops of other domains (but com.microsoft MatMulNBits / GatherBlockQuantized) and nodes on
//   sequences of floats;
// - a weight with values past float16's 65504 stays float32 with its users, unless those
//   values are 1e8 or more in magnitude and only added or selected (masks of -FLT_MAX meaning
//   "minus infinity"): they saturate to +-65504, counted in the report;
// - If/Loop/Scan and calls of local functions are transparent: their bodies are converted the
//   same way (float formals and results float16), and a captured outer value is seen with its
//   converted type.
// Algebra: a Cast joins a value to each use that wants the other type; a Cast whose input
// has its type already, and a float16 -> float32 -> float16 pair (exact), are removed.
// Settings (--extra): convert-float16.keep-io-types=false (the interface becomes float16),
// convert-float16.block=Op,... and convert-float16.allow=Op,... (edit the block list).
#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "ir/error.h"
#include "ir/key.h"
#include "passes/float16_policy.h"
#include "passes/passes.h"
#include "passes/propagation.h"
#include "passes/rewrite.h"
#include "passes/validate.h"
#include "schema/op_schema.h"

namespace onnxfold {

namespace {

constexpr DataType kF32 = DataType::kFloat;
constexpr DataType kF16 = DataType::kFloat16;

// What a use (or a definition) wants of a float32 value.
enum class Want : uint8_t { kKeep, kHalf, kFloat };  // kKeep: either type (Cast's input)

struct Decision {
  std::string why;        // non-empty: the node stays float32 (reported)
  bool numeric = false;   // kept for range or precision: an island that grows
  bool flexible = false;  // Cast / Constant: the output's type follows its uses
  std::vector<Want> in, out;
};

// Known shapes: small 1-D or scalar values are shape arithmetic.
bool isSmall(const Type& t) {
  if (!t.isTensor() || !t.shape) return false;
  if (t.shape->rank() == 0) return true;
  return t.shape->rank() == 1 && t.shape->dims[0].isKnown() && t.shape->dims[0].value <= 64;
}

bool widens(DataType from, DataType to) {
  const bool f16 = from == kF16 || from == DataType::kBfloat16;
  return (f16 && (to == kF32 || to == DataType::kDouble)) ||
         (from == kF32 && to == DataType::kDouble);
}

enum class Role { kMain, kSub, kFunction };

class Converter {
 public:
  Converter(Model& m, PassContext& ctx)
      : m_(m), ctx_(ctx), s_(readFloat16Settings(ctx.options())), prop_(m) {}

  bool run() {
    for (Function& f : m_.functions)
      functions_[f.domain + "::" + f.name] = &f;
    inferGraph(*m_.graph);
    collect(*m_.graph, Role::kMain);
    for (Function& f : m_.functions) {
      if (functions_ok_ && analyzed_.count(&f)) collect(*f.body, Role::kFunction);
    }
    scanConstants();
    for (Graph* g : graphs_)
      decideGraph(*g);
    if (const Node* q = float32QuantizeOp()) {
      ctx_.note("not converted: " + q->op_type + " " + q->displayName() +
                " takes float32 scales only at this opset (19 admits float16), and casts "
                "around every QuantizeLinear / DequantizeLinear would break the QDQ patterns");
      return false;
    }
    assignStorage();
    if (!anyHalf()) return false;
    convertConstants();
    for (Graph* g : graphs_)
      insertCasts(*g);
    fixAttributesAndTypes();
    for (Graph* g : graphs_)
      removeCasts(*g);
    // An op whose type rule we misjudged must not reach the output: failing here has the
    // pass manager undo the conversion and report why.
    try {
      validateModel(m_);
    } catch (const ValidationError& e) {
      throw Error(std::string("the converted model would be invalid: ") + e.what());
    }
    report();
    return true;
  }

 private:
  // ---------------------------------------------------------------- types before the pass

  void inferGraph(Graph& g) {
    for (Node* n : g.nodes()) {
      prop_.seedSubgraphInputs(*n);
      n->forEachSubgraph([&](Graph& sg) { inferGraph(sg); });
      auto it = functions_.find(n->domain + "::" + n->op_type);
      if (it != functions_.end() && !n->isDefaultDomain()) {
        inferCall(*n, *it->second);
      } else {
        prop_.inferNode(*n);
      }
    }
  }

  // A call gives its function's formals their types, and its attribute references their
  // values (a Conv's group decides its output's shape); every call must give the same.
  void inferCall(Node& call, Function& f) {
    Graph& body = *f.body;
    std::string pattern;
    for (size_t i = 0; i < body.inputs().size(); ++i) {
      const Value* a = call.input(i);
      pattern += a != nullptr && isF32(a) ? 'f' : '-';
    }
    std::vector<std::pair<Attribute*, Attribute>> refs;  // reference -> itself, while bound
    forEachReference(body, [&](Attribute& ref) {
      const Attribute* bound = boundAttribute(ref, call, f);
      pattern +=
          bound != nullptr && !bound->g && bound->graphs.empty() ? attributeKey(*bound) : "?";
      refs.emplace_back(&ref, Attribute());
    });
    auto [it, fresh] = call_types_.emplace(&f, pattern);
    if (!fresh) {
      if (it->second != pattern || in_progress_.count(&f)) functions_ok_ = false;
    } else {
      for (size_t i = 0; i < body.inputs().size(); ++i) {
        Value* formal = body.inputs()[i];
        if (formal->type.isNone() && call.input(i) != nullptr)
          formal->type = prop_.typeOf(call.input(i));
      }
      // Inference reads the bound values; the references are put back after.
      for (auto& [ref, saved] : refs) {
        const Attribute* bound = boundAttribute(*ref, call, f);
        if (bound == nullptr || bound->g || !bound->graphs.empty()) continue;
        Attribute value = bound->copyWithoutGraphs();
        value.name = ref->name;
        saved = std::exchange(*ref, std::move(value));
      }
      in_progress_.insert(&f);
      Function* outer = std::exchange(scope_, &f);  // a body may call another function
      prop_.setFunctionScope(&body, &f.opset_import);
      inferGraph(body);
      for (auto& [ref, saved] : refs) {
        if (!saved.ref_attr_name.empty()) *ref = std::move(saved);
      }
      scope_ = outer;
      prop_.setFunctionScope(outer ? outer->body.get() : nullptr,
                             outer ? &outer->opset_import : nullptr);
      in_progress_.erase(&f);
      analyzed_.insert(&f);
    }
    for (size_t i = 0; i < call.numOutputs() && i < body.outputs().size(); ++i) {
      Value* out = call.output(i);
      if (out == nullptr || !out->type.isNone()) continue;
      out->type = prop_.typeOf(body.outputs()[i]);
      // The body was inferred for the first call's shapes: other calls share only the type.
      if (out->type.isTensor()) out->type.shape.reset();
    }
  }

  // Calls f on every attribute reference in `g` and its subgraphs.
  template <class F>
  static void forEachReference(Graph& g, const F& f) {
    for (Node* n : g.nodes()) {
      for (Attribute& a : n->attributes) {
        if (!a.ref_attr_name.empty()) f(a);
      }
      n->forEachSubgraph([&](Graph& sg) { forEachReference(sg, f); });
    }
  }

  bool isF32(const Value* v) const {
    if (v == nullptr) return false;
    if (v->isInitializer()) return v->initializer()->dtype() == kF32;
    return prop_.typeOf(v).isTensor() && prop_.typeOf(v).elem_type == kF32;
  }
  static bool mentionsF32(const Type& t) {
    if (t.isTensor() || t.kind == Type::Kind::kSparseTensor) return t.elem_type == kF32;
    return t.elem && mentionsF32(*t.elem);
  }

  void collect(Graph& g, Role role) {
    graphs_.push_back(&g);
    roles_[&g] = role;
    for (Node* n : g.nodes())
      n->forEachSubgraph([&](Graph& sg) { collect(sg, Role::kSub); });
  }

  int64_t opsetOf(const Graph& g) const { return m_.opsetVersionIn(g, ""); }

  // ---------------------------------------------------------------- weights out of range

  // Reads each float32 constant once: values past 65504 either saturate (infinities in all
  // but name) or keep the constant and its users float32.
  void scanConstants() {
    for (Graph* g : graphs_) {
      for (Value* v : g->initializers()) {
        if (!isF32(v)) continue;
        if (v->initializer()->isLoaded())
          scan(v, *v->initializer());
        else
          unreadable_.insert(v);  // external data that was not loaded: written back as it is
      }
      for (Node* n : g->nodes()) {
        const Attribute* a = n->isOp("Constant") ? n->attr("value") : nullptr;
        if (a != nullptr && a->type == AttrType::kTensor && a->t.dtype() == kF32)
          scan(n->output(0), a->t);
      }
    }
  }

  void scan(const Value* v, const Tensor& t) {
    const HalfRange r = scanHalfRange(t);
    if (r.largest_kept > 0) {
      std::ostringstream why;
      why << "input '" << v->name() << "' has values up to " << r.largest_kept
          << ", past float16's 65504";
      out_of_range_[v] = why.str();
    } else if (r.saturated > 0 && !onlyAddedOrSelected(v)) {
      std::ostringstream why;
      why << "input '" << v->name() << "' has values of " << kFloat16Sentinel
          << " or more that are not a mask (only an added or selected value stands for an "
             "infinity)";
      out_of_range_[v] = why.str();
    } else if (r.saturated > 0) {
      saturated_[v] = r.saturated;
    }
  }

  // Saturating a huge value to +-65504 keeps the meaning only where it stands for an infinity
  // that is added or selected (an attention mask: Add, Where, Max/Min, through reshapes and
  // gathers); a divisor or a factor of 1e9 is a real value and must keep float32.
  static bool onlyAddedOrSelected(const Value* v, int depth = 8) {
    if (depth == 0 || v->isGraphOutput()) return false;
    for (const Use& u : v->uses()) {
      const Node* n = u.user;
      if (!n->isDefaultDomain()) return false;
      if (n->isOp("Add") || n->isOp("Sub") || n->isOp("Max") || n->isOp("Min")) continue;
      if (n->isOp("Where") && u.index != 0) continue;
      const bool moves = n->isOp("Reshape") || n->isOp("Unsqueeze") || n->isOp("Squeeze") ||
                         n->isOp("Expand") || n->isOp("Tile") || n->isOp("Transpose") ||
                         n->isOp("Slice") || n->isOp("Gather") || n->isOp("Identity") ||
                         n->isOp("Concat");
      if (!moves || (u.index != 0 && !n->isOp("Concat"))) return false;
      for (const Value* out : n->outputs()) {
        if (out != nullptr && !onlyAddedOrSelected(out, depth - 1)) return false;
      }
    }
    return true;
  }

  // ---------------------------------------------------------------- decisions

  void decideGraph(Graph& g) {
    markShapeComputations(g);
    for (Node* n : g.nodes()) {
      Decision d = decideNode(*n);
      if (d.numeric) {
        for (Value* v : n->outputs()) {
          if (v != nullptr) island_.insert(v);
        }
      }
      decisions_[n] = std::move(d);
    }
  }

  // Small float values that feed a Cast to an integer type or Resize's roi/scales compute
  // shapes: they, and the small values they are computed from, stay float32.
  void markShapeComputations(Graph& g) {
    std::vector<std::pair<Value*, const Node*>> work;
    for (Node* n : g.nodes()) {
      if (!n->isDefaultDomain()) continue;
      if (n->op_type == "Cast" && isF32(n->input(0)) &&
          !isFloatingPoint(static_cast<DataType>(n->attrInt("to", 0))) &&
          isSmall(prop_.typeOf(n->input(0)))) {
        work.emplace_back(n->input(0), n);
      }
      if (n->op_type == "Resize" || n->op_type == "Upsample") {
        for (size_t i = 1; i < n->numInputs() && i <= 2; ++i) {
          if (isF32(n->input(i))) work.emplace_back(n->input(i), n);
        }
      }
    }
    while (!work.empty()) {
      auto [v, sink] = work.back();
      work.pop_back();
      Node* p = v->producer();
      if (p == nullptr || p->graph() != &g || shape_nodes_.count(p) || !p->isDefaultDomain() ||
          p->hasSubgraphs() || p->isOp("Constant")) {
        continue;
      }
      const std::string why =
          "computes a shape (feeds " + sink->op_type + " " + sink->displayName() + ")";
      if (p->op_type == "Cast") {  // from integers: the shape's source
        shape_nodes_[p] = why;
        continue;
      }
      bool small = true;
      for (Value* in : p->inputs()) {
        if (isF32(in) && !in->isConstant() && !isSmall(prop_.typeOf(in))) small = false;
      }
      if (!small) continue;
      shape_nodes_[p] = why;
      for (Value* in : p->inputs()) {
        if (isF32(in)) work.emplace_back(in, sink);
      }
    }
  }

  bool isConstantValue(const Value* v) const {
    return v->isConstant() || (v->producer() != nullptr && v->producer()->isOp("Constant"));
  }

  Decision decideNode(Node& n) {
    Decision d;
    d.in.assign(n.numInputs(), Want::kKeep);
    d.out.assign(n.numOutputs(), Want::kKeep);
    std::vector<bool> in_f(n.numInputs()), out_f(n.numOutputs());
    bool any = false, other_kinds = false;
    for (size_t i = 0; i < n.numInputs(); ++i) {
      in_f[i] = isF32(n.input(i));
      any |= in_f[i];
      if (n.input(i) != nullptr && !in_f[i] && mentionsF32(prop_.typeOf(n.input(i))))
        other_kinds = true;
    }
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      out_f[i] = isF32(n.output(i));
      any |= out_f[i];
      if (n.output(i) != nullptr && !out_f[i] && mentionsF32(prop_.typeOf(n.output(i))))
        other_kinds = true;
    }
    if (!any && !other_kinds) return d;
    auto setAll = [&](Want w) {
      for (size_t i = 0; i < n.numInputs(); ++i) {
        if (in_f[i]) d.in[i] = w;
      }
      for (size_t i = 0; i < n.numOutputs(); ++i) {
        if (out_f[i]) d.out[i] = w;
      }
    };
    auto block = [&](std::string why, bool numeric = false) {
      setAll(Want::kFloat);
      d.why = std::move(why);
      d.numeric = numeric;
      return d;
    };
    const bool control =
        n.isDefaultDomain() && (n.op_type == "If" || n.op_type == "Loop" || n.op_type == "Scan");
    auto fn = functions_.find(n.domain + "::" + n.op_type);
    const bool call = !n.isDefaultDomain() && fn != functions_.end();
    if (other_kinds) return block("sequences, maps and optionals of float32 are not converted");
    if (control) {
      setAll(Want::kHalf);
      return d;
    }
    if (call) {
      if (!functions_ok_ || !analyzed_.count(fn->second))
        return block("calls a local function whose calls disagree on input types");
      setAll(Want::kHalf);
      return d;
    }
    if (n.domain == "com.microsoft" &&
        (n.op_type == "MatMulNBits" || n.op_type == "GatherBlockQuantized")) {
      // MatMulNBits' T1 (A, scales, float zero points, bias, the output) and
      // GatherBlockQuantized's T2 (scales, the output) are float32 or float16; the packed data
      // and zero points are uint8, indices and g_idx integers (quantize-weights' int4 'ort').
      setAll(Want::kHalf);
      return d;
    }
    if (!n.isDefaultDomain()) return block("an op of domain '" + n.domain + "' (no schema)");
    if (n.hasSubgraphs()) return block("holds a subgraph");
    if (n.op_type == "Constant") {
      if (n.attr("value") == nullptr) return block("a sparse or list constant");
      d.flexible = true;
      return d;
    }
    if (auto it = s_.blocked.find(n.op_type); it != s_.blocked.end())
      return block("block list: " + it->second, true);
    if (n.op_type == "Mul" && n.numInputs() == 2 && n.input(0) == n.input(1))
      return block("a square: overflows float16 past 256", true);
    if (auto it = shape_nodes_.find(&n); it != shape_nodes_.end()) return block(it->second);
    for (size_t i = 0; i < n.numInputs(); ++i) {
      auto it = in_f[i] ? out_of_range_.find(n.input(i)) : out_of_range_.end();
      if (it != out_of_range_.end()) return block(it->second);
    }
    if (isFloat16IslandStep(n.op_type)) {
      bool from_island = false, only = true;
      for (size_t i = 0; i < n.numInputs(); ++i) {
        if (!in_f[i]) continue;
        if (island_.count(n.input(i)))
          from_island = true;
        else if (!isConstantValue(n.input(i)))
          only = false;
      }
      if (from_island && only)
        return block("reads only float32 results (statistics of a normalization or softmax)", true);
    }
    if (n.op_type == "Cast") {
      if (out_f[0]) d.flexible = true;
      return d;
    }
    return decideBySchema(n, d, in_f, out_f, block);
  }

  template <class Block>
  Decision decideBySchema(Node& n, Decision& d, std::vector<bool>& in_f, std::vector<bool>& out_f,
                          Block& block) {
    const int64_t opset = opsetOf(*n.graph());
    const OpSchema* s = OpSchemas::instance().find("", n.op_type, opset);
    if (s == nullptr) return block("no schema at opset " + std::to_string(opset));
    // Constraint of each slot (a heterogeneous variadic slot is its own).
    auto constraint = [&](const FormalParameter* f, size_t slot, bool input) {
      if (f == nullptr) return -1000;
      if (f->heterogeneous) return -static_cast<int>(slot) - (input ? 1 : 500);
      return f->type;
    };
    std::map<int, bool> has_f32, has_input, allowed;
    std::vector<int> ci(n.numInputs()), co(n.numOutputs());
    auto note = [&](int c, bool f32, bool input) {
      has_f32[c] = has_f32[c] || f32;
      has_input[c] = has_input[c] || input;
      allowed[c] = c >= 0 && (s->types[static_cast<size_t>(c)].masks[0] >> 10 & 1);
    };
    for (size_t i = 0; i < n.numInputs(); ++i) {
      ci[i] = constraint(s->input(i), i, true);
      if (n.input(i) != nullptr) note(ci[i], in_f[i], true);
    }
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      co[i] = constraint(s->output(i), i, false);
      if (n.output(i) != nullptr) note(co[i], out_f[i], false);
    }
    // A value of unknown type that shares a constraint with float32 values is float32 too.
    for (size_t i = 0; i < n.numInputs(); ++i) {
      Value* v = n.input(i);
      if (v != nullptr && !in_f[i] && has_f32[ci[i]] &&
          prop_.typeOf(v).elem_type == DataType::kUndefined && !v->isInitializer()) {
        in_f[i] = true;
        f32_unknown_.insert(v);
      }
    }
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      Value* v = n.output(i);
      if (v != nullptr && !out_f[i] && has_f32[co[i]] &&
          prop_.typeOf(v).elem_type == DataType::kUndefined) {
        out_f[i] = true;
        f32_unknown_.insert(v);
      }
    }
    // An output-only constraint follows the inputs or an attribute fixAttributesAndTypes sets;
    // a `to` of another op (BitCast: the same bits) cannot just be changed.
    const bool foreign_to = n.op_type != "Cast" && n.attr("to") != nullptr;
    auto half = [&](int c) { return allowed[c] && (has_input[c] || !foreign_to); };
    std::set<std::string> refused;
    bool any_half = false;
    for (size_t i = 0; i < n.numInputs(); ++i) {
      if (!in_f[i]) continue;
      const bool forced =
          (n.op_type == "Resize" && (i == 1 || i == 2)) || (n.op_type == "Upsample" && i == 1);
      d.in[i] = half(ci[i]) && !forced ? Want::kHalf : Want::kFloat;
      any_half |= d.in[i] == Want::kHalf;
      if (!half(ci[i])) refused.insert(s->input(i)->name);
    }
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      if (!out_f[i]) continue;
      d.out[i] = half(co[i]) ? Want::kHalf : Want::kFloat;
      any_half |= d.out[i] == Want::kHalf;
      if (!half(co[i])) refused.insert(s->output(i)->name);
    }
    if (!any_half) {
      std::string names;
      for (const std::string& r : refused)
        names += (names.empty() ? "" : ", ") + r;
      d.why = "its schema (opset " + std::to_string(s->since_version) + ") admits no float16 for " +
              names;
    }
    return d;
  }

  // A QuantizeLinear or DequantizeLinear that keeps float32 (opset < 19), if any.
  const Node* float32QuantizeOp() const {
    for (const Graph* g : graphs_) {
      for (const Node* n : g->nodes()) {
        if ((n->isOp("QuantizeLinear") || n->isOp("DequantizeLinear")) &&
            !decisions_.at(n).why.empty()) {
          return n;
        }
      }
    }
    return nullptr;
  }

  // ---------------------------------------------------------------- storage

  bool f32(const Value* v) const { return isF32(v) || f32_unknown_.count(v); }

  Want useWant(const Node* user, size_t slot) const {
    auto it = decisions_.find(user);
    if (it == decisions_.end() || slot >= it->second.in.size()) return Want::kFloat;
    const Want w = it->second.in[slot];
    // Cast takes either type: a Cast to float16 favours converting its input.
    if (w == Want::kKeep)
      return user->attrInt("to", 0) == static_cast<int64_t>(kF16) ? Want::kHalf : Want::kKeep;
    return w;
  }

  // What a graph's float inputs and outputs are: the interface's choice for the main graph;
  // for a body, what its If/Loop/Scan takes (float32 when that node stays float32).
  Want outputWant(const Graph& g) const {
    const Role role = roles_.at(&g);
    if (role == Role::kMain) return s_.keep_io ? Want::kFloat : Want::kHalf;
    if (role == Role::kSub && !decisions_.at(g.ownerNode()).why.empty()) return Want::kFloat;
    return Want::kHalf;
  }

  void assignStorage() {
    std::vector<Value*> flexible;
    for (Graph* g : graphs_) {
      for (Value* v : g->inputs()) {
        if (!f32(v)) continue;
        storage_[v] = outputWant(*g) == Want::kFloat ? kF32 : kF16;
      }
      for (Value* v : g->initializers()) {
        if (f32(v) && !v->isGraphInput()) flexible.push_back(v);
      }
      for (Node* n : g->nodes()) {
        const Decision& d = decisions_.at(n);
        for (size_t i = 0; i < n->numOutputs(); ++i) {
          Value* v = n->output(i);
          if (v == nullptr || !f32(v)) continue;
          if (d.flexible)
            flexible.push_back(v);
          else
            storage_[v] = d.out[i] == Want::kHalf ? kF16 : kF32;
        }
      }
      for (Value* v : g->outputs())
        output_wants_[v].push_back(outputWant(*g));
    }
    // A constant is float16 when a use wants it so (and it fits). A Cast's result only when no
    // use wants float32: an id or position cast from int64 and read by a float32 island would
    // lose its digits past 2048 in a float16 round trip.
    for (Value* v : flexible) {
      bool half = false, full = false;
      for (const Use& u : v->uses()) {
        const Want w = useWant(u.user, u.index);
        half |= w == Want::kHalf;
        full |= w == Want::kFloat;
      }
      if (auto it = output_wants_.find(v); it != output_wants_.end()) {
        for (Want w : it->second) {
          half |= w == Want::kHalf;
          full |= w == Want::kFloat;
        }
      }
      const Node* p = v->producer();
      if (p != nullptr && p->isOp("Cast") && full) half = false;
      storage_[v] = half && !out_of_range_.count(v) && !unreadable_.count(v) ? kF16 : kF32;
    }
  }

  bool anyHalf() const {
    for (const auto& [v, t] : storage_) {
      if (t == kF16) return true;
    }
    return false;
  }

  // ---------------------------------------------------------------- rewriting

  void convertConstants() {
    for (Graph* g : graphs_) {
      for (Value* v : g->initializers()) {
        auto it = storage_.find(v);
        if (it == storage_.end() || it->second != kF16) continue;
        Tensor* t = v->initializer();
        weight_bytes_before_ += t->byteSize();
        *t = toFloat16(*t);
        weight_bytes_after_ += t->byteSize();
        ++weights_converted_;
      }
      for (Node* n : g->nodes()) {
        if (!n->isOp("Constant") || !storage_.count(n->output(0)) ||
            storage_.at(n->output(0)) != kF16) {
          continue;
        }
        Attribute* a = n->attr("value");
        weight_bytes_before_ += a->t.byteSize();
        a->t = toFloat16(a->t);
        weight_bytes_after_ += a->t.byteSize();
        ++weights_converted_;
      }
    }
  }

  Value* castOf(Value* v, DataType to, Rewriter& rw, Node* before) {
    Graph& g = rw.graph();
    Value*& c = casts_[{v, to, &g}];
    if (c != nullptr) return c;
    Node* n = rw.create("Cast", {v}, 1, before,
                        g.uniqueName(v->name() + (to == kF16 ? "/to_float16" : "/to_float32")),
                        attributes(Attribute::makeInt("to", static_cast<int64_t>(to))));
    c = n->output(0);
    rw.rename(c, g.uniqueName(v->name() + (to == kF16 ? "_float16" : "_float32")));
    c->type = prop_.typeOf(v);
    if (!c->type.isTensor()) c->type = Type::tensor(to);
    c->type.elem_type = to;
    ++casts_inserted_;
    return c;
  }

  static DataType storageFor(Want w) { return w == Want::kHalf ? kF16 : kF32; }

  void insertCasts(Graph& g) {
    Rewriter rw(m_, g, /*notify=*/false);
    for (Node* n : g.nodes()) {
      const Decision& d = decisions_.at(n);
      for (size_t i = 0; i < n->numInputs(); ++i) {
        Value* v = n->input(i);
        auto it = v != nullptr ? storage_.find(v) : storage_.end();
        if (it == storage_.end() || d.in[i] == Want::kKeep) continue;
        if (it->second != storageFor(d.in[i]))
          rw.setInput(n, i, castOf(v, storageFor(d.in[i]), rw, n));
      }
    }
    const Want want = outputWant(g);
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      Value* v = g.outputs()[i];
      auto it = storage_.find(v);
      if (it == storage_.end() || it->second == storageFor(want)) continue;
      Value* c = castOf(v, storageFor(want), rw, nullptr);
      if (roles_.at(&g) == Role::kMain && g.canTakeOutputName(c)) {
        rw.replaceGraphOutput(v, c);  // the interface keeps its names
      } else {
        rw.setGraphOutput(i, c);
      }
    }
  }

  void fixAttributesAndTypes() {
    for (auto& [v, t] : storage_) {
      if (t != kF16) continue;
      Value* mv = const_cast<Value*>(v);
      if (mv->type.isTensor()) mv->type.elem_type = kF16;
      Node* p = mv->producer();
      if (p == nullptr || !p->isDefaultDomain()) continue;
      Rewriter rw(m_, *p->graph(), /*notify=*/false);
      const std::string& op = p->op_type;
      if (op == "Cast" && p->attrInt("to", 0) == static_cast<int64_t>(kF32)) {
        rw.setAttr(p, Attribute::makeInt("to", static_cast<int64_t>(kF16)));
      } else if (op == "ConstantOfShape") {
        const Attribute* a = p->attr("value");
        Tensor value = a != nullptr ? a->t : Tensor(kF32, {1});
        if (value.dtype() == kF32) rw.setAttr(p, Attribute::makeTensor("value", toFloat16(value)));
      } else {
        // The attribute naming the output type, when it defaults to float32 or says so.
        const bool defaults_float = op == "RandomNormal" || op == "RandomUniform" ||
                                    op == "MelWeightMatrix" ||
                                    op.find("Window") != std::string::npos;
        const char* key = op.find("Window") != std::string::npos || op == "MelWeightMatrix"
                              ? "output_datatype"
                              : "dtype";
        if ((defaults_float || p->attr(key) != nullptr) &&
            p->attrInt(key, static_cast<int64_t>(kF32)) == static_cast<int64_t>(kF32)) {
          rw.setAttr(p, Attribute::makeInt(key, static_cast<int64_t>(kF16)));
        }
      }
    }
  }

  DataType typeNow(const Value* v) const {
    if (auto it = storage_.find(v); it != storage_.end()) return it->second;
    if (v->isInitializer()) return v->initializer()->dtype();
    return v->type.isTensor() ? v->type.elem_type : prop_.typeOf(v).elem_type;
  }

  // A Cast to the type its input has, and a widening Cast undone by the next, go.
  void removeCasts(Graph& g) {
    Rewriter rw(m_, g, /*notify=*/false);
    for (Node* n : g.nodes()) {
      if (!n->isOp("Cast") || n->output(0) == nullptr) continue;
      Value* out = n->output(0);
      const auto to = static_cast<DataType>(n->attrInt("to", 0));
      Value* in = n->input(0);
      Value* to_value = nullptr;
      if (typeNow(in) == to && isFloatingPoint(to)) {
        to_value = in;
      } else if (Node* p = in->producer(); p != nullptr && p->isOp("Cast") &&
                                           typeNow(p->input(0)) == to && widens(to, typeNow(in))) {
        to_value = p->input(0);
      }
      if (to_value == nullptr) continue;
      if (out->isGraphOutput() && !g.canTakeOutputName(to_value)) continue;
      rw.replaceValue(out, to_value);
      if (!out->hasUses() && !out->isGraphOutput()) {
        rw.erase(n);
        ++casts_removed_;
      }
      if (Node* p = to_value == in ? nullptr : in->producer();
          p != nullptr && !in->hasUses() && !in->isGraphOutput()) {
        rw.erase(p);
        ++casts_removed_;
      }
    }
  }

  // ---------------------------------------------------------------- report

  void report() {
    std::map<std::pair<std::string, std::string>, std::vector<std::string>> kept;
    int64_t kept_nodes = 0;
    for (Graph* g : graphs_) {
      for (Node* n : g->nodes()) {
        auto it = decisions_.find(n);
        if (it == decisions_.end() || it->second.why.empty()) continue;
        kept[{n->op_type, it->second.why}].push_back(n->displayName());
        ++kept_nodes;
      }
    }
    std::ostringstream s;
    s << "converted " << weights_converted_ << " float32 weights to float16 ("
      << weight_bytes_before_ << " -> " << weight_bytes_after_ << " bytes)";
    ctx_.note(s.str());
    int64_t saturated = 0;
    for (const auto& [v, count] : saturated_) {
      auto it = storage_.find(v);
      if (it != storage_.end() && it->second == kF16) {
        saturated += count;
        ++saturated_weights_;
      }
    }
    if (saturated > 0) {
      ctx_.note("saturated " + std::to_string(saturated) + " values of " +
                std::to_string(saturated_weights_) +
                " weights to +-65504 (magnitudes of 1e8 or more: infinities such as mask values)");
    }
    for (const auto& [key, names] : kept) {
      std::string list;
      for (size_t i = 0; i < names.size() && i < 4; ++i)
        list += (i ? ", " : "") + names[i];
      if (names.size() > 4) list += ", ...";
      ctx_.note("kept in float32: " + std::to_string(names.size()) + " " + key.first + " (" +
                key.second + "): " + list);
    }
    ctx_.count("weights converted", weights_converted_);
    ctx_.count("float32 weight bytes converted", static_cast<int64_t>(weight_bytes_before_));
    ctx_.count("float16 weight bytes written", static_cast<int64_t>(weight_bytes_after_));
    ctx_.count("weights saturated", saturated_weights_);
    ctx_.count("values saturated", saturated);
    ctx_.count("nodes kept in float32", kept_nodes);
    ctx_.count("casts inserted", casts_inserted_);
    ctx_.count("casts removed", casts_removed_);
  }

  using CastKey = std::tuple<const Value*, DataType, const Graph*>;

  Model& m_;
  PassContext& ctx_;
  Float16Settings s_;
  Propagation prop_;
  std::unordered_map<std::string, Function*> functions_;         // "domain::name"
  std::unordered_map<const Function*, std::string> call_types_;  // formals' and references' binding
  std::unordered_set<const Function*> analyzed_, in_progress_;
  bool functions_ok_ = true;
  Function* scope_ = nullptr;   // the function whose body is being inferred
  std::vector<Graph*> graphs_;  // outer graphs first
  std::unordered_map<const Graph*, Role> roles_;
  std::unordered_map<const Value*, std::string> out_of_range_;
  std::unordered_map<const Value*, int64_t> saturated_;
  std::unordered_map<const Node*, std::string> shape_nodes_;
  std::unordered_set<const Value*> island_, f32_unknown_, unreadable_;
  std::unordered_map<const Node*, Decision> decisions_;
  std::unordered_map<const Value*, DataType> storage_;
  std::unordered_map<const Value*, std::vector<Want>> output_wants_;
  std::map<CastKey, Value*> casts_;
  int64_t weights_converted_ = 0, saturated_weights_ = 0, casts_inserted_ = 0, casts_removed_ = 0;
  uint64_t weight_bytes_before_ = 0, weight_bytes_after_ = 0;
};

class ConvertFloat16 : public Pass {
 public:
  std::string_view name() const override { return "convert-float16"; }
  std::string_view description() const override {
    return "float32 weights and computation to float16; inputs, outputs and ops that overflow "
           "in float16 stay float32";
  }
  std::vector<std::string> extraKeys() const override {
    return {"keep-io-types", "block", "allow"};
  }
  void checkOptions(const PassOptions& options) const override { readFloat16Settings(options); }
  bool run(Model& model, PassContext& ctx) override {
    if (!model.training_info.empty()) {
      ctx.note("not converted: the model has training graphs");
      return false;
    }
    return Converter(model, ctx).run();
  }
};

}  // namespace

std::unique_ptr<Pass> createConvertFloat16() {
  return std::make_unique<ConvertFloat16>();
}

}  // namespace onnxfold
