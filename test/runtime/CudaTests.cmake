# Tests of the CUDA kernel layer (dtcrt_cuda): each kernel on random data
# against the CPU kernel (skipped when no CUDA device is visible), and the
# start-up error of a --target=cuda program on a machine without a GPU
# (runs everywhere). Included from test/runtime/CMakeLists.txt when the
# dtcrt_cuda target exists. Test names: runtime.Cuda.*
add_executable(dtcrt-cuda-require-device ${CMAKE_CURRENT_LIST_DIR}/CudaRequireDeviceHelper.cpp)
target_link_libraries(dtcrt-cuda-require-device PRIVATE dtcrt_cuda)

add_executable(dtcrt-test-cuda
  ${CMAKE_CURRENT_LIST_DIR}/CudaKernelTestElementwise.cpp
  ${CMAKE_CURRENT_LIST_DIR}/CudaKernelTestGemm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/CudaKernelTestNN.cpp
  ${CMAKE_CURRENT_LIST_DIR}/CudaKernelTestResample.cpp
  ${CMAKE_CURRENT_LIST_DIR}/CudaKernelTestMarks.cpp
  ${CMAKE_CURRENT_LIST_DIR}/CudaKernelTestNoDevice.cpp
)
target_link_libraries(dtcrt-test-cuda PRIVATE dtcrt_cuda dtcrt GTest::gtest GTest::gtest_main)
target_include_directories(dtcrt-test-cuda PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_compile_definitions(dtcrt-test-cuda PRIVATE
  DTCRT_CUDA_REQUIRE_DEVICE_HELPER="$<TARGET_FILE:dtcrt-cuda-require-device>")
add_dependencies(dtcrt-test-cuda dtcrt-cuda-require-device)
gtest_discover_tests(dtcrt-test-cuda TEST_PREFIX "runtime.Cuda." DISCOVERY_TIMEOUT 60)
add_dependencies(dtcrt-tests dtcrt-test-cuda)
include(${CMAKE_CURRENT_LIST_DIR}/../simt/SimtTests.cmake)
