# Emscripten (wasm) specific global settings. Included from the top-level CMakeLists.txt before any
# target is defined, so googletest and every object use the same flags.
include_guard(GLOBAL)
if(NOT EMSCRIPTEN)
  return()
endif()

# Every object must use the same exception mode (googletest included), at compile and link time.
# -mbulk-memory: memcpy/memset of our code become memory.copy/memory.fill instructions, which run
# at native speed even before V8 tiers a function up (byte loops in Liftoff code were a large
# share of a one-shot optimize); every engine with SIMD128 has bulk memory too.
add_compile_options(-msimd128 -mbulk-memory -fwasm-exceptions)
add_link_options(-fwasm-exceptions -mbulk-memory)

# Optimize for size, except the kernels. A typical run of the module is one optimize call: V8 runs
# each function in its baseline compiler (Liftoff) first and recompiles hot ones with TurboFan in
# background threads. At -O3 the reader and pass drivers are heavily inlined (functions of 10-18
# KB) and TurboFan spent ~0.75 s of CPU on them in a mobilenet_v2 run that was over before the
# code was ready. -Os keeps them small (less to compile, a smaller .wasm to download); the code
# that loops over tensor elements keeps -O3 (vectorized loops, inlined element access): the
# kernels, tensor storage (hashing, allocation) and the freezing patterns' weight arithmetic
# (at -Os its per-element vector construction alone cost ~60 ms on mobilenet_v2). Without
# -ffast-math and with no FMA in wasm, the optimization level does not change float results
# (determinism.test.mjs checks wasm against native on every shared model).
set(ONNXFOLD_WASM_OPT_FLAGS "-Os" CACHE STRING "wasm: optimization level of non-kernel code and of the link")
set(CMAKE_CXX_FLAGS_RELEASE "${ONNXFOLD_WASM_OPT_FLAGS} -DNDEBUG")
set(CMAKE_C_FLAGS_RELEASE "${ONNXFOLD_WASM_OPT_FLAGS} -DNDEBUG")
file(GLOB_RECURSE _onnxfold_kernel_sources CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/*.cpp")
list(APPEND _onnxfold_kernel_sources "${CMAKE_CURRENT_SOURCE_DIR}/src/ir/tensor.cpp"
     "${CMAKE_CURRENT_SOURCE_DIR}/src/passes/patterns/helpers.cpp")
set_source_files_properties(${_onnxfold_kernel_sources} PROPERTIES COMPILE_OPTIONS "-O3")

# Debian's emcc runs tools/acorn-optimizer.js at link time, which needs Debian's node-acorn from
# /usr/share/nodejs; nodesource's node does not search there. The presets set NODE_PATH, but a plain
# `ninja` or `cmake --build` from a shell without it would fail at link ("Cannot find module
# 'acorn'"), so wrap every link step with `cmake -E env NODE_PATH=...`.
set(ONNXFOLD_EMCC_NODE_PATH "/usr/share/nodejs" CACHE PATH "NODE_PATH for emcc's node tools (node-acorn)")
if(ONNXFOLD_EMCC_NODE_PATH AND EXISTS "${ONNXFOLD_EMCC_NODE_PATH}/acorn")
  set(_np "${ONNXFOLD_EMCC_NODE_PATH}")
  if(DEFINED ENV{NODE_PATH} AND NOT "$ENV{NODE_PATH}" STREQUAL "" AND
     NOT "$ENV{NODE_PATH}" STREQUAL "${ONNXFOLD_EMCC_NODE_PATH}")
    set(_np "${_np}:$ENV{NODE_PATH}")
  endif()
  set(CMAKE_CXX_LINKER_LAUNCHER "${CMAKE_COMMAND};-E;env;NODE_PATH=${_np}")
  set(CMAKE_C_LINKER_LAUNCHER "${CMAKE_COMMAND};-E;env;NODE_PATH=${_np}")
endif()

# Node used to run wasm test binaries. emcmake injects "node;--experimental-wasm-threads", which
# node 20 rejects ("bad option"); the presets set /usr/bin/node.
if(CMAKE_CROSSCOMPILING_EMULATOR)
  list(GET CMAKE_CROSSCOMPILING_EMULATOR 0 _node)
  set(ONNXFOLD_NODE "${_node}" CACHE FILEPATH "node executable used to run wasm tests")
else()
  find_program(ONNXFOLD_NODE NAMES node nodejs REQUIRED)
endif()

# The repo's package.json says "type": "module", so node would load the CommonJS glue of plain
# emscripten executables (foo.js) as ES modules and fail ("__dirname is not defined in ES module
# scope"). Node-only executables therefore get the .cjs suffix (onnxfold_wasm_node_executable), and
# the build tree gets its own package.json marking any other .js in it as CommonJS.
file(WRITE "${CMAKE_BINARY_DIR}/package.json" "{ \"type\": \"commonjs\" }\n")

# Link options for node-only wasm executables (tests, wasm CLI): synchronous instantiation (no
# fetch), direct access to the host file system (tests read ../shared), big heap and stack.
set(ONNXFOLD_WASM_NODE_EXE_LINK_OPTIONS
    -sENVIRONMENT=node
    -sNODERAWFS=1
    -sWASM_ASYNC_COMPILATION=0
    -sALLOW_MEMORY_GROWTH=1
    -sMAXIMUM_MEMORY=4GB
    -sTOTAL_STACK=8MB          # emscripten 3.1.6 name (renamed STACK_SIZE in later versions)
    -sEXIT_RUNTIME=1)

# onnxfold_wasm_node_executable(<target>): make <target> a node-only program (<target>.cjs + .wasm)
function(onnxfold_wasm_node_executable target)
  set_target_properties(${target} PROPERTIES SUFFIX ".cjs")
  target_link_options(${target} PRIVATE ${ONNXFOLD_WASM_NODE_EXE_LINK_OPTIONS})
endfunction()
