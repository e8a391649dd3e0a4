# The layering of DistOpt's libraries, checked when the project is
# configured. Every library is in the layer of the top-level folder that
# defines it:
#
#   runtime/             0  no MLIR: kernels, communication, the executor
#   lib/ and dialects/   1  the MLIR-free cost core (lib/Cluster, Cost,
#                           Schedule, Sim, Search), the dialects, and the
#                           MLIR adapters below the passes (lib/Import,
#                           lib/Codegen, lib/ModelGen)
#   passes/              2  the passes and pipelines
#   tools/               3  what the tools share (registration, flags)
#
# A library may link libraries of its own layer or below only: nothing in
# lib/ or dialects/ calls into passes/, so a pass can use any of them (the
# search, the emitter's probe) and any of them can be tested without the
# passes. dist_check_layering() fails the configuration on an upward edge.

# The layer of a source folder below \p root, or -1 outside the four.
function(dist_layer_of dir root out)
  file(RELATIVE_PATH rel ${root} ${dir})
  string(REGEX REPLACE "/.*" "" top "${rel}")
  if(top STREQUAL "runtime")
    set(${out} 0 PARENT_SCOPE)
  elseif(top STREQUAL "lib" OR top STREQUAL "dialects")
    set(${out} 1 PARENT_SCOPE)
  elseif(top STREQUAL "passes")
    set(${out} 2 PARENT_SCOPE)
  elseif(top STREQUAL "tools")
    set(${out} 3 PARENT_SCOPE)
  else()
    set(${out} -1 PARENT_SCOPE)
  endif()
endfunction()

# Checks every direct link of the libraries \p ARGN (each one's own edges:
# a transitive upward edge is some library's direct one).
function(dist_check_layering)
  set(root ${PROJECT_SOURCE_DIR})
  set(errors "")
  foreach(lib ${ARGN})
    get_target_property(dir ${lib} SOURCE_DIR)
    dist_layer_of(${dir} ${root} layer)
    get_target_property(links ${lib} LINK_LIBRARIES)
    if(NOT links)
      continue()
    endif()
    foreach(dep ${links})
      if(NOT TARGET ${dep})
        continue()
      endif()
      get_target_property(imported ${dep} IMPORTED)
      if(imported)
        continue()
      endif()
      get_target_property(depdir ${dep} SOURCE_DIR)
      dist_layer_of(${depdir} ${root} deplayer)
      if(layer GREATER_EQUAL 0 AND deplayer GREATER layer)
        file(RELATIVE_PATH from ${root} ${dir})
        file(RELATIVE_PATH to ${root} ${depdir})
        string(APPEND errors
               "\n  ${lib} (${from}/) links ${dep} (${to}/)")
      endif()
    endforeach()
  endforeach()
  if(errors)
    message(FATAL_ERROR
      "DistOpt layering: libraries link a layer above their own:${errors}\n"
      "runtime/ < lib/ and dialects/ < passes/ < tools/ "
      "(cmake/DistOptLayering.cmake). Move the shared code down into the "
      "lower layer, or the caller up.")
  endif()
endfunction()
