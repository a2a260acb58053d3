# Third-party dependencies, all from Debian packages:
#   onnxfold::protozero, onnxfold::hwy, onnxfold::json, onnxfold::cli11  (header-only INTERFACE targets)
#   onnxfold::xnnpack (only if ONNXFOLD_WITH_XNNPACK; defines ONNXFOLD_HAVE_XNNPACK=1)
#
# Natively the headers come from /usr/include. Emscripten must not see /usr/include (glibc headers
# would shadow its own libc), so for wasm we build a directory of symlinks to just the header-only
# libraries and add it with -isystem.
include_guard(GLOBAL)

set(ONNXFOLD_SYSTEM_INCLUDE_DIR "/usr/include" CACHE PATH
    "Where the Debian header-only libraries (protozero, hwy, nlohmann, CLI) are installed")

function(_onnxfold_header_target name header)
  add_library(onnxfold_dep_${name} INTERFACE)
  add_library(onnxfold::${name} ALIAS onnxfold_dep_${name})
  if(NOT EXISTS "${ONNXFOLD_SYSTEM_INCLUDE_DIR}/${header}")
    message(FATAL_ERROR "onnxfold: ${ONNXFOLD_SYSTEM_INCLUDE_DIR}/${header} not found "
                        "(run scripts/bootstrap to install the Debian -dev packages)")
  endif()
  if(EMSCRIPTEN)
    target_include_directories(onnxfold_dep_${name} SYSTEM INTERFACE "${ONNXFOLD_WASM_SYSINCLUDE}")
  endif()
endfunction()

if(EMSCRIPTEN)
  set(ONNXFOLD_WASM_SYSINCLUDE "${CMAKE_BINARY_DIR}/sysinclude")
  file(MAKE_DIRECTORY "${ONNXFOLD_WASM_SYSINCLUDE}")
  foreach(dir protozero hwy nlohmann CLI)
    if(NOT EXISTS "${ONNXFOLD_WASM_SYSINCLUDE}/${dir}" AND EXISTS "${ONNXFOLD_SYSTEM_INCLUDE_DIR}/${dir}")
      file(CREATE_LINK "${ONNXFOLD_SYSTEM_INCLUDE_DIR}/${dir}" "${ONNXFOLD_WASM_SYSINCLUDE}/${dir}" SYMBOLIC)
    endif()
  endforeach()
endif()

_onnxfold_header_target(protozero protozero/pbf_reader.hpp)
_onnxfold_header_target(hwy hwy/highway.h)
_onnxfold_header_target(json nlohmann/json.hpp)
_onnxfold_header_target(cli11 CLI/CLI.hpp)
# Highway is used header-only with static dispatch (libhwy is not available for wasm). Avoid
# hwy::AllocateAligned / HWY_ASSERT / dynamic dispatch, which need libhwy.
# The native SIMD flags decide Highway's static target (see ONNXFOLD_NATIVE_SIMD_FLAGS).

# --- XNNPACK -------------------------------------------------------------------------------------
set(ONNXFOLD_XNNPACK_WASM_INCLUDE "" CACHE PATH "wasm only: include dir of an XNNPACK built for wasm")
set(ONNXFOLD_XNNPACK_WASM_LIB "" CACHE FILEPATH "wasm only: XNNPACK static library built for wasm (plus pthreadpool etc. if needed; ;-list)")
if(EMSCRIPTEN)
  if(ONNXFOLD_XNNPACK_WASM_INCLUDE AND ONNXFOLD_XNNPACK_WASM_LIB)
    set(_xnn_default ON)
  else()
    set(_xnn_default OFF)
  endif()
else()
  set(_xnn_default ON)
endif()
option(ONNXFOLD_WITH_XNNPACK "Use XNNPACK kernels for constant folding" ${_xnn_default})

if(ONNXFOLD_WITH_XNNPACK)
  add_library(onnxfold_dep_xnnpack INTERFACE)
  add_library(onnxfold::xnnpack ALIAS onnxfold_dep_xnnpack)
  if(EMSCRIPTEN)
    if(NOT (ONNXFOLD_XNNPACK_WASM_INCLUDE AND ONNXFOLD_XNNPACK_WASM_LIB))
      message(FATAL_ERROR "onnxfold: ONNXFOLD_WITH_XNNPACK=ON for wasm needs ONNXFOLD_XNNPACK_WASM_INCLUDE "
                          "and ONNXFOLD_XNNPACK_WASM_LIB (Debian's XNNPACK is native only)")
    endif()
    target_include_directories(onnxfold_dep_xnnpack SYSTEM INTERFACE "${ONNXFOLD_XNNPACK_WASM_INCLUDE}")
    target_link_libraries(onnxfold_dep_xnnpack INTERFACE ${ONNXFOLD_XNNPACK_WASM_LIB})
  else()
    # Debian ships only xnnpack.h + libXNNPACK.so: no CMake config, no pkg-config.
    find_path(XNNPACK_INCLUDE_DIR xnnpack.h)
    find_path(PTHREADPOOL_INCLUDE_DIR pthreadpool.h)
    find_library(XNNPACK_LIBRARY XNNPACK)
    find_library(PTHREADPOOL_LIBRARY pthreadpool)
    if(NOT XNNPACK_INCLUDE_DIR OR NOT XNNPACK_LIBRARY OR NOT PTHREADPOOL_INCLUDE_DIR OR NOT PTHREADPOOL_LIBRARY)
      message(FATAL_ERROR "onnxfold: XNNPACK not found (xnnpack.h: ${XNNPACK_INCLUDE_DIR}, "
                          "libXNNPACK: ${XNNPACK_LIBRARY}, pthreadpool.h: ${PTHREADPOOL_INCLUDE_DIR}, "
                          "libpthreadpool: ${PTHREADPOOL_LIBRARY}). Install libxnnpack-dev and "
                          "libpthreadpool-dev (scripts/bootstrap) or configure with -DONNXFOLD_WITH_XNNPACK=OFF")
    endif()
    target_include_directories(onnxfold_dep_xnnpack SYSTEM INTERFACE "${XNNPACK_INCLUDE_DIR}" "${PTHREADPOOL_INCLUDE_DIR}")
    target_link_libraries(onnxfold_dep_xnnpack INTERFACE "${XNNPACK_LIBRARY}" "${PTHREADPOOL_LIBRARY}")
  endif()
  target_compile_definitions(onnxfold_dep_xnnpack INTERFACE ONNXFOLD_HAVE_XNNPACK=1)
  message(STATUS "onnxfold: XNNPACK enabled")
else()
  message(STATUS "onnxfold: XNNPACK disabled")
endif()
