#include "passes/registry.h"

#include <algorithm>
#include <map>

#include "passes/passes.h"

namespace onnxfold {

namespace {
std::map<std::string, PassFactory>& rawTable() {
  static std::map<std::string, PassFactory> t;
  return t;
}

// Explicit registration: static self-registering objects would be dropped by
// the linker from a static library.
std::map<std::string, PassFactory>& table() {
  static const bool builtins = [] {
    for (PassFactory f : builtinPassFactories()) {
      const std::string name(f()->name());
      rawTable().emplace(name, std::move(f));
    }
    return true;
  }();
  (void)builtins;
  return rawTable();
}
}  // namespace

void registerPass(const std::string& name, PassFactory factory) {
  table()[name] = std::move(factory);
}

std::unique_ptr<Pass> createPass(const std::string& name) {
  auto it = table().find(name);
  return it == table().end() ? nullptr : it->second();
}

std::vector<std::string> registeredPasses() {
  std::vector<std::string> names;
  for (const auto& [k, v] : table())
    names.push_back(k);
  return names;
}

std::vector<std::string> defaultPipeline() {
  std::vector<std::string> p;
  // Identity nodes go in freezing-patterns (the eliminate-identity pass is that one pattern).
  for (const char* name :
       {"freeze", "fold-constants", "freezing-patterns", "cse", "pool-constants", "dce"}) {
    if (table().count(name)) p.emplace_back(name);
  }
  return p;
}

}  // namespace onnxfold
