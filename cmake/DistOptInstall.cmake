# The installable package: one shared library, libDistOpt.so, holding every
# MLIR-linked DistOpt library, the public headers under include/dist/, and a
# CMake package so that `find_package(DistOpt)` works for other compilers.
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

get_property(dist_libs GLOBAL PROPERTY DIST_LIBS)
add_library(DistOpt SHARED ${PROJECT_SOURCE_DIR}/cmake/empty.cpp)
if(dist_libs)
  target_link_libraries(DistOpt PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,${dist_libs}>")
endif()
target_link_libraries(DistOpt PUBLIC MLIR LLVM)
target_include_directories(DistOpt INTERFACE
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set_target_properties(DistOpt PROPERTIES VERSION ${PROJECT_VERSION})

install(TARGETS DistOpt EXPORT DistOptTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/dist
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
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
