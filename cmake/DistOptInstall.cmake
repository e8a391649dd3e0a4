# The installable package: one shared library, libDistOpt.so, holding every
# MLIR-linked DistOpt library, the public headers under include/dist/ (and
# under include/distopt/ the ones they include), and a
# CMake package so that `find_package(DistOpt)` works for other compilers.
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

get_property(dist_libs GLOBAL PROPERTY DIST_LIBS)
add_library(DistOpt SHARED ${PROJECT_SOURCE_DIR}/cmake/empty.cpp)
# Every object of every component goes in, so that clients see the whole
# public API; linking the archives as well brings their external dependencies
# (ONNX, protobuf, oneDNN) without duplicating symbols.
foreach(lib ${dist_libs})
  target_sources(DistOpt PRIVATE $<TARGET_OBJECTS:${lib}>)
endforeach()
target_link_libraries(DistOpt PRIVATE ${dist_libs})
target_link_libraries(DistOpt PUBLIC MLIR LLVM)
# MLIR's and LLVM's imported targets carry no include directories; a client
# of the public headers needs them.
target_include_directories(DistOpt INTERFACE
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/distopt>
  $<INSTALL_INTERFACE:${MLIR_INCLUDE_DIRS}>
  $<INSTALL_INTERFACE:${LLVM_INCLUDE_DIRS}>)
set_target_properties(DistOpt PROPERTIES VERSION ${PROJECT_VERSION})

install(TARGETS DistOpt EXPORT DistOptTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/dist
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# What dist/Dialects.h and dist/Passes.h stand on: the dialect and pass
# headers with their generated declarations, and the MLIR-free cost core
# they use, laid out as in the source and build trees under
# include/distopt/ (an include directory of the package's target).
set(dist_internal_includedir ${CMAKE_INSTALL_INCLUDEDIR}/distopt)
foreach(dir dialects passes lib/Cluster lib/Cost lib/Export lib/Schedule
            lib/Sim lib/Search)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/
    DESTINATION ${dist_internal_includedir}/${dir}
    FILES_MATCHING PATTERN "*.h")
endforeach()
foreach(dir dialects passes)
  install(DIRECTORY ${PROJECT_BINARY_DIR}/${dir}/
    DESTINATION ${dist_internal_includedir}/${dir}
    FILES_MATCHING PATTERN "*.h.inc" PATTERN "CMakeFiles" EXCLUDE)
endforeach()
install(EXPORT DistOptTargets NAMESPACE DistOpt::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/DistOpt)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/DistOptConfig.cmake.in
  ${PROJECT_BINARY_DIR}/DistOptConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/DistOpt)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/DistOptConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/DistOptConfig.cmake
              ${PROJECT_BINARY_DIR}/DistOptConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/DistOpt)
