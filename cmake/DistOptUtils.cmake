# Helpers shared by every DistOpt component.

# dist_add_library(name SRCS... [MLIR_LIBS libs...] [LINK_LIBS libs...]
#                  [DEPENDS targets...] [EH])
# A static PIC library. MLIR_LIBS are linked through libMLIR.so;
# EH turns C++ exceptions on for this library only (the ONNX checker and
# shape inference throw; this LLVM/MLIR build is compiled without them).
function(dist_add_library name)
  cmake_parse_arguments(ARG "EH" "" "MLIR_LIBS;LINK_LIBS;DEPENDS" ${ARGN})
  add_library(${name} STATIC ${ARG_UNPARSED_ARGUMENTS})
  if(ARG_MLIR_LIBS)
    target_link_libraries(${name} PUBLIC MLIR)
  endif()
  target_link_libraries(${name} PUBLIC LLVM ${ARG_LINK_LIBS})
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  if(ARG_EH)
    target_compile_options(${name} PRIVATE -fexceptions)
  else()
    target_compile_options(${name} PRIVATE -fno-exceptions)
  endif()
  set_property(GLOBAL APPEND PROPERTY DIST_LIBS ${name})
endfunction()

# dist_add_tool(name SRCS... LINK_LIBS libs...)
function(dist_add_tool name)
  cmake_parse_arguments(ARG "" "" "LINK_LIBS" ${ARGN})
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE ${ARG_LINK_LIBS} MLIR LLVM)
  target_compile_options(${name} PRIVATE -fno-exceptions)
  install(TARGETS ${name} RUNTIME DESTINATION bin)
endfunction()

# dist_add_unittest(name SRCS... LINK_LIBS libs...)
# A GoogleTest executable registered with CTest (label "unit").
function(dist_add_unittest name)
  cmake_parse_arguments(ARG "" "" "LINK_LIBS" ${ARGN})
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE ${ARG_LINK_LIBS} GTest::gtest_main)
  set_target_properties(${name} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/unittests)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS unit)
  set_property(GLOBAL APPEND PROPERTY DIST_UNITTESTS ${name})
endfunction()
