// Factories of the unflatten passes (not in the default pipeline).
#pragma once

#include <memory>

#include "passes/pass.h"

namespace onnxfold {

std::unique_ptr<Pass> createOutlineFunctions();  // outline_functions.cpp
std::unique_ptr<Pass> createInlineFunctions();   // inline_functions.cpp

// The domain outline-functions writes its functions in.
inline constexpr const char* kModuleFunctionDomain = "onnxfold.modules";

// Call-node metadata written by outline-functions: original names the call's path
// does not give back, one per line, "n<TAB>body value<TAB>node name" (the node
// whose first output is that body value) or "v<TAB>body value<TAB>value name";
// inline-functions uses it to restore them.
inline constexpr const char* kOutlineNamesKey = "onnxfold.outline.names";

}  // namespace onnxfold
