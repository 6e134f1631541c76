# Writes the version script of libttrace.so from include/ttrace/apis.inc: the exported symbols of every
# TTRACE_API entry are global, everything else (our code, static libstdc++ and zstd) is local.
# Usage: cmake -DAPIS=apis.inc -DOUT=libttrace.map -P gen_version_script.cmake
file(STRINGS "${APIS}" lines REGEX "^TTRACE_API\\(")
set(body "")
foreach(line IN LISTS lines)
  if(NOT line MATCHES "\"([A-Za-z_][A-Za-z0-9_]*)\"")
    message(FATAL_ERROR "cannot read the symbol of: ${line}")
  endif()
  string(APPEND body "    ${CMAKE_MATCH_1};\n")
endforeach()
if(body STREQUAL "")
  message(FATAL_ERROR "no TTRACE_API entries in ${APIS}")
endif()
set(content "/* Generated from include/ttrace/apis.inc by shim/gen_version_script.cmake. */\n{\n  global:\n${body}  local:\n    *;\n};\n")
file(WRITE "${OUT}" "${content}")
