#include "kernels/subgraph_eval.h"

#include <string>
#include <unordered_map>

#include "ir/error.h"
#include "kernels/eval_budget.h"
#include "kernels/op_registry.h"

namespace onnxfold {

namespace {

// The values one evaluation of a graph has computed, and how it resolves the others.
class Frame {
 public:
  Frame(const Graph& body, const SubgraphEnv& env) : body_(body), env_(env) {
    // Nested subgraphs see this frame's values, then whatever the enclosing graphs give.
    inner_.opset = env.opset;
    inner_.outer = [this](const Value* v) { return find(v); };
    inner_.in_body = true;
  }
  Frame(const Frame&) = delete;  // inner_ refers to this frame
  Frame& operator=(const Frame&) = delete;

  // The content of `v`, or null when neither this graph nor the enclosing ones know it.
  const Tensor* find(const Value* v) const {
    if (auto it = values_.find(v); it != values_.end()) return &it->second;
    if (v->graph() == &body_ && v->isInitializer()) {
      return v->initializer()->isLoaded() ? v->initializer() : nullptr;
    }
    return env_.outer ? env_.outer(v) : nullptr;
  }

  void set(const Value* v, Tensor t) { values_.insert_or_assign(v, std::move(t)); }
  const SubgraphEnv& inner() const { return inner_; }

 private:
  const Graph& body_;
  const SubgraphEnv& env_;
  SubgraphEnv inner_;
  std::unordered_map<const Value*, Tensor> values_;
};

std::string graphLabel(const Graph& g) {
  return "subgraph '" + g.name + "'";
}

// Rethrows what a node's evaluation threw with the graph named in front, keeping the kind.
[[noreturn]] void rethrowWithin(const Graph& g) {
  try {
    throw;
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(graphLabel(g) + ": " + e.what());
  } catch (const ResourceError&) {
    throw;  // a memory limit is not about this graph
  } catch (const std::exception& e) {
    throw Error(graphLabel(g) + ": " + e.what());
  }
}

// The outputs of an If: the taken branch, evaluated with the frame's values visible.
std::vector<Tensor> evaluateIf(const Node& n, const Tensor& cond, const Frame& frame) {
  if (cond.dtype() != DataType::kBool || cond.numElements() != 1) {
    throw Error("If " + n.displayName() + ": the condition must be one bool");
  }
  const char* which = cond.at<uint8_t>(0) != 0 ? "then_branch" : "else_branch";
  const Attribute* a = n.attr(which);
  if (a == nullptr || !a->g) throw Error("If " + n.displayName() + ": no " + which + " graph");
  if (a->g->outputs().size() != n.numOutputs()) {
    throw Error("If " + n.displayName() + ": " + which + " has " +
                std::to_string(a->g->outputs().size()) + " outputs, the node " +
                std::to_string(n.numOutputs()));
  }
  return evaluateSubgraph(*a->g, {}, frame.inner());
}

}  // namespace

std::vector<Tensor> evaluateSubgraph(const Graph& body, const std::vector<const Tensor*>& inputs,
                                     const SubgraphEnv& env) {
  if (inputs.size() != body.inputs().size()) {
    throw Error(graphLabel(body) + ": given " + std::to_string(inputs.size()) +
                " inputs, it takes " + std::to_string(body.inputs().size()));
  }
  EvalBudget::chargeSteps(1, "a subgraph");  // an iteration is work even with an empty body
  Frame frame(body, env);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr) {
      throw Error(graphLabel(body) + ": input '" + body.inputs()[i]->name() + "' is not given");
    }
    frame.set(body.inputs()[i], *inputs[i]);
  }
  for (const Node* n : body.nodes()) {
    std::vector<const Tensor*> ins;
    for (const Value* v : n->inputs()) {
      if (v == nullptr) {
        ins.push_back(nullptr);
        continue;
      }
      const Tensor* t = frame.find(v);
      if (t == nullptr) {
        throw Error(graphLabel(body) + ": node " + n->displayName() + " uses '" + v->name() +
                    "', which is not known");
      }
      ins.push_back(t);
    }
    std::vector<Tensor> outs;
    try {
      if (n->isOp("If")) {
        outs = evaluateIf(*n, *ins.at(0), frame);
      } else {
        const int64_t opset = env.opset ? env.opset(n->domain) : -1;
        if (opset < 0) throw Error("domain '" + n->domain + "' is not imported");
        outs = evaluateNode(*n, opset, ins, &frame.inner());
      }
    } catch (...) {
      rethrowWithin(body);
    }
    for (size_t i = 0; i < n->numOutputs() && i < outs.size(); ++i) {
      if (n->output(i) != nullptr) frame.set(n->output(i), std::move(outs[i]));
    }
  }
  std::vector<Tensor> results;
  for (const Value* v : body.outputs()) {
    const Tensor* t = frame.find(v);
    if (t == nullptr) {
      throw Error(graphLabel(body) + ": output '" + v->name() + "' is not computed");
    }
    results.push_back(*t);
  }
  return results;
}

}  // namespace onnxfold
