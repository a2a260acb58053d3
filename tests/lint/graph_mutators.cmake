# Fails when a pass changes a graph other than through the Rewriter (issue #25): a file under
# src/passes other than rewrite.cpp (and tests) calling a mutator of Graph, Node or Value.
#
#   cmake -DSOURCE_DIR=<repo> -P tests/lint/graph_mutators.cmake
#
# The IR's structural mutators (Graph's, Node's inputs and outputs, Value::replaceAllUsesWith)
# take a GraphEdit key that passes cannot make, so the compiler refuses them; this check covers
# the rest: the setters that take no key (Node::setAttr/removeAttr, Value::setName) and the key
# itself (GraphBuilder, for code that builds graphs whole, is no door for passes).
# The Rewriter's verbs share some names (setInput, addInput, removeInput, setAttr, removeAttr,
# replaceValue): those count only on a receiver that is not a rewriter (by the convention `rw`,
# `prw`, ...). fold_recipe.cpp is exempt: it builds a detached scratch graph of one node for a
# deferred kernel run, not a graph of the model.
cmake_minimum_required(VERSION 3.25)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "pass -DSOURCE_DIR=<repository root>")
endif()

set(only_graph "createNode|appendNode|insertBefore|insertAfter|addNode|eraseNode|cloneNode|replaceOutput|setOutput|addOutput|addOutputExact|removeOutput|addInitializer|addSparseInitializer|removeInitializer|addInputForInitializer|removeAllInputs|setName|replaceAllUsesWith")
set(shared "replaceValue|addInput|removeInput|setInput|setAttr|removeAttr")

file(GLOB_RECURSE files "${SOURCE_DIR}/src/passes/*.cpp" "${SOURCE_DIR}/src/passes/*.h")
set(found "")
foreach(f IN LISTS files)
  if(f MATCHES "_test\\.cpp$|_test_util\\.h$|/src/passes/(rewrite|fold_recipe)\\.cpp$")
    continue()
  endif()
  file(READ "${f}" text)
  # Line comments go first (they may quote a call).
  string(REGEX REPLACE "//[^\n]*" "" text "${text}")
  string(REGEX MATCHALL "[A-Za-z0-9_]*(\\.|->)(${only_graph})\\(" a "${text}")
  string(REGEX MATCHALL "[A-Za-z0-9_]*(\\.|->)(${shared})\\(" b "${text}")
  string(REGEX MATCHALL "Graph::cloneGraphInto\\(|GraphBuilder|GraphEdit|Graph::Edit|ir/graph_builder\\.h" c "${text}")
  set(calls ${a} ${c})
  foreach(m IN LISTS b)
    if(NOT m MATCHES "^[a-z]*rw(\\.|->)")
      list(APPEND calls "${m}")
    endif()
  endforeach()
  if(calls)
    file(RELATIVE_PATH rel "${SOURCE_DIR}" "${f}")
    list(JOIN calls ", " joined)
    string(APPEND found "  ${rel}: ${joined}\n")
  endif()
endforeach()
if(found)
  message(FATAL_ERROR "passes change graphs other than through the Rewriter "
                      "(src/passes/rewrite.h):\n${found}")
endif()
message(STATUS "no pass calls a Graph, Node or Value mutator directly")
