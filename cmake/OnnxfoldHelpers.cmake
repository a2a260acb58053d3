# Small helpers shared by the onnxfold CMake files.
include_guard(GLOBAL)

# onnxfold_glob(<out-var> [EXCLUDE_SUFFIXES suffix...] PATTERNS pattern...)
# Recursive CONFIGURE_DEPENDS glob (re-run at build time when files appear or disappear), sorted,
# minus files whose name ends with one of the given suffixes (e.g. _test.cpp).
function(onnxfold_glob out)
  cmake_parse_arguments(ARG "" "" "EXCLUDE_SUFFIXES;PATTERNS" ${ARGN})
  file(GLOB_RECURSE files CONFIGURE_DEPENDS ${ARG_PATTERNS})
  foreach(suffix IN LISTS ARG_EXCLUDE_SUFFIXES)
    string(REPLACE "." "\\." re "${suffix}")
    list(FILTER files EXCLUDE REGEX "${re}$")
  endforeach()
  list(SORT files)
  set(${out} "${files}" PARENT_SCOPE)
endfunction()

# onnxfold_warnings(<target>): the project's warning set (not applied to third-party code).
function(onnxfold_warnings target)
  if(MSVC)
    target_compile_options(${target} PRIVATE /W4)
  else()
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-unused-parameter)
  endif()
endfunction()
