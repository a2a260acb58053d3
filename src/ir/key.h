// Canonical byte keys: parts written so that two different sequences of parts never give the
// same string (each string is length-prefixed), for signatures compared as strings (module
// bodies to deduplicate, the attribute values a function call binds).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace onnxfold {

void putKeyPart(std::string& key, std::string_view part);
void putKeyNumber(std::string& key, int64_t v);
// Name, type, reference and value of an attribute (not graph values): equal keys, equal
// attributes.
std::string attributeKey(const Attribute& a);

}  // namespace onnxfold
