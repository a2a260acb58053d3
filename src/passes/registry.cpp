#include "passes/registry.h"

#include <algorithm>
#include <map>

#include "ir/error.h"
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

void checkExtraOptions(const PassOptions& options) {
  std::map<std::string, std::unique_ptr<Pass>> passes;
  for (const auto& [key, value] : options.extra) {
    const size_t dot = key.find('.');
    const std::string pass_name = key.substr(0, dot);
    auto it = passes.find(pass_name);
    if (it == passes.end()) it = passes.emplace(pass_name, createPass(pass_name)).first;
    if (!it->second)
      throw Error("option extra '" + key + "': no pass is named '" + pass_name + "'");
    const std::vector<std::string> keys = it->second->extraKeys();
    const std::string name = dot == std::string::npos ? "" : key.substr(dot + 1);
    if (std::find(keys.begin(), keys.end(), name) == keys.end()) {
      std::string known;
      for (const std::string& k : keys)
        known += (known.empty() ? "" : ", ") + pass_name + "." + k;
      throw Error("option extra '" + key + "': pass '" + pass_name + "' has no setting '" + name +
                  "' (" + (known.empty() ? "it takes none" : "it takes " + known) + ")");
    }
  }
  for (const auto& [name, pass] : passes)
    pass->checkOptions(options);
}

std::vector<std::string> defaultPipeline() {
  std::vector<std::string> p;
  // Identity nodes go in freezing-patterns (the eliminate-identity pass is that one pattern).
  for (const char* name : {"freeze", "fold-constants", "freezing-patterns", "fuse-normalizations",
                           "cse", "pool-constants", "dce"}) {
    if (table().count(name)) p.emplace_back(name);
  }
  return p;
}

}  // namespace onnxfold
