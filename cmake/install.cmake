# Installs libetrt, its public headers and a CMake package, so a runner can
#   find_package(etrt CONFIG REQUIRED)
#   target_link_libraries(my_runner PRIVATE etrt::etrt)
if(NOT TARGET etrt)
  return()
endif()
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS etrt EXPORT etrtTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/etrt DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# Built against the GPU-free NvInfer implementation, libetrt needs it beside itself (its soname,
# libetrt_gpufree_nvinfer.so.0, never collides with NVIDIA's libnvinfer.so.10).
if(TARGET etrt_gpufree_nvinfer)
  install(TARGETS etrt_gpufree_nvinfer LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_SKIP)
endif()
install(EXPORT etrtTargets NAMESPACE etrt:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/etrt)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/etrtConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/etrtConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/etrt)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/etrtConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/etrtConfig.cmake ${PROJECT_BINARY_DIR}/etrtConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/etrt)
