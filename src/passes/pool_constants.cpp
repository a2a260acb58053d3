// pool-constants: identical initializers become one.
//
// Before:  initializer %a = f32[2] {1,2}; initializer %b = f32[2] {1,2}; %y = Add(%a, %b)
// After:   initializer %a = f32[2] {1,2}; %y = Add(%a, %a)
//
// Identical means same dtype, dims and bytes: grouped by dtype and dims, then by a
// hash of 16 samples of the bytes, then by a hash of all of them (each weight read once:
// weights alike on their samples are not compared pair by pair), then compared byte for
// byte (in chunks, so weights in an external file are streamed, never held). Graph
// inputs and outputs keep their own initializers (their names are the interface). Each
// graph pools its own initializers.
#include <string>
#include <unordered_map>

#include "passes/passes.h"
#include "passes/rewrite.h"

namespace onnxfold {

namespace {

class PoolConstants : public Pass {
 public:
  std::string_view name() const override { return "pool-constants"; }
  std::string_view description() const override {
    return "merge initializers with the same dtype, dims and content";
  }

  bool run(Model& model, PassContext& ctx) override {
    bool changed = false;
    forEachGraph(model, [&](Graph& g) { changed |= pool(model, g, ctx); });
    return changed;
  }

 private:
  // Bytes a deferred fold computes: its sample hash already names the computation, and
  // hashing its content would compute it.
  static bool computed(const Tensor& t) {
    return t.buffer().isSourceRange() && t.buffer().source()->identity().has_value();
  }

  static bool pool(Model& model, Graph& g, PassContext& ctx) {
    bool changed = false;
    Rewriter rw(model, g, /*notify=*/false);
    std::unordered_multimap<uint64_t, Value*> seen;
    const std::vector<Value*> inits = g.initializers();
    auto poolable = [](const Value* v) {
      return !v->isGraphInput() && !v->isGraphOutput() && v->initializer()->isLoaded();
    };
    // Only tensors whose dtype and dims occur more than once can be pooled: the
    // others (most weights) are never hashed, so their bytes are not even read.
    auto signature = [](const Tensor& t) {
      std::string key;
      const auto dt = static_cast<int32_t>(t.dtype());
      key.append(reinterpret_cast<const char*>(&dt), sizeof dt);
      for (int64_t d : t.dims())
        key.append(reinterpret_cast<const char*>(&d), sizeof d);
      return key;
    };
    std::unordered_map<std::string, int> shapes;
    for (const Value* v : inits) {
      if (poolable(v)) ++shapes[signature(*v->initializer())];
    }
    for (Value* v : inits) {
      if (!poolable(v)) continue;
      const Tensor& t = *v->initializer();
      if (shapes[signature(t)] < 2) continue;
      const uint64_t h = t.sampleHash();
      Value* same = nullptr;
      auto range = seen.equal_range(h);
      for (auto it = range.first; it != range.second && same == nullptr; ++it) {
        const Tensor& o = *it->second->initializer();
        if (!computed(t) && !computed(o) && o.contentHash() != t.contentHash()) continue;
        if (o.sameContent(t)) same = it->second;
      }
      if (same == nullptr) {
        seen.emplace(h, v);
        continue;
      }
      ctx.count("initializers pooled");
      ctx.count("bytes saved", static_cast<int64_t>(t.byteSize()));
      rw.replaceValue(v, same);
      rw.removeConstant(v);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> createPoolConstants() {
  return std::make_unique<PoolConstants>();
}

}  // namespace onnxfold
