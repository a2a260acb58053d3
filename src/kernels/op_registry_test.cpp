// The registry's since-versions against the generated schema (src/schema, from the ONNX spec):
// an entry applies until the next one of its op, so a schema version the registry does not
// list would silently run the older kernel, whose meaning may have changed (an op version
// exists because something changed). So every version is listed, by the op family's file,
// which says why when one kernel computes several.
#include "kernels/op_registry.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>

#include "schema/op_schema.h"

namespace onnxfold {
namespace {

using OpKey = std::pair<std::string, std::string>;  // (domain, op_type)

std::map<OpKey, std::set<int>> registeredVersions() {
  std::map<OpKey, std::set<int>> out;
  for (const OpEntry& e : OpRegistry::instance().entries())
    out[{std::string(e.domain), std::string(e.op_type)}].insert(e.since_version);
  return out;
}

std::string name(const OpKey& k, int v) {
  return (k.first.empty() ? "" : k.first + ".") + k.second + "-" + std::to_string(v);
}

TEST(OpRegistry, EveryEntryIsASchemaVersion) {
  const OpSchemas& schemas = OpSchemas::instance();
  std::string wrong;
  for (const auto& [key, versions] : registeredVersions()) {
    if (!schemas.knowsDomain(key.first)) continue;  // com.microsoft: no generated schema
    for (int v : versions) {
      const OpSchema* s = schemas.find(key.first, key.second, v);
      if (s == nullptr || s->since_version != v) wrong += " " + name(key, v);
    }
  }
  EXPECT_EQ(wrong, "") << "registry entries at versions the ONNX spec does not have";
}

TEST(OpRegistry, EverySchemaVersionOfARegisteredOpIsListed) {
  const std::map<OpKey, std::set<int>> registered = registeredVersions();
  std::string missing;
  for (const OpSchema& s : OpSchemas::instance().all()) {
    auto it = registered.find({s.domain, s.op_type});
    if (it == registered.end() || s.since_version < *it->second.begin()) continue;
    // A deprecated version (Upsample-10, Scatter-11, GroupNormalization-18) is the old op kept
    // for old models: the entry before it computes it, as runtimes do.
    if (s.deprecated) continue;
    if (it->second.count(s.since_version) == 0) missing += " " + name(it->first, s.since_version);
  }
  EXPECT_EQ(missing, "") << "schema versions the registry runs with an older entry";
}

}  // namespace
}  // namespace onnxfold
