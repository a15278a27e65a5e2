# The CUDA kernels on the CPU (issue 19): runtime/cuda/*.cu rewritten by
# simt_preprocess.py and compiled as host C++ against the SIMT layer
# (SimtRuntime.h, force-included) into dtcrt_cuda_simt, with
# AddressSanitizer so out-of-bounds accesses of device and shared memory
# fail the test. dtcrt-test-cuda-simt is the kernel test suite of
# dtcrt-test-cuda linked against it, run under the three grid policies
# (exact, wide, narrow). Included from test/runtime/CudaTests.cmake.
# Test names: runtime.CudaSimt.<policy>.*
include_guard(GLOBAL)
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "dtcrt: no Python 3; skipping the SIMT kernel tests (test/simt)")
  return()
endif()
set(DTC_SIMT_DIR ${CMAKE_CURRENT_LIST_DIR})
option(DTC_SIMT_ASAN "Build the SIMT kernels and their tests with AddressSanitizer" ON)

set(_simt_sources)
foreach(unit Context Graph Marks Fused Elementwise Activation Compare Gemm Conv Pool Norm Softmax
             Loss Shape Resample Optimizer)
  set(_out ${CMAKE_CURRENT_BINARY_DIR}/simt/${unit}.cpp)
  add_custom_command(OUTPUT ${_out}
    COMMAND Python3::Interpreter ${DTC_SIMT_DIR}/simt_preprocess.py ${DTCRT_CUDA_DIR}/${unit}.cu
            ${_out}
    DEPENDS ${DTCRT_CUDA_DIR}/${unit}.cu ${DTC_SIMT_DIR}/simt_preprocess.py
    COMMENT "simt: rewriting ${unit}.cu")
  list(APPEND _simt_sources ${_out})
endforeach()
set(_simt_layer_test ${CMAKE_CURRENT_BINARY_DIR}/simt/SimtLayerTest.cpp)
add_custom_command(OUTPUT ${_simt_layer_test}
  COMMAND Python3::Interpreter ${DTC_SIMT_DIR}/simt_preprocess.py ${DTC_SIMT_DIR}/SimtLayerTest.cu
          ${_simt_layer_test}
  DEPENDS ${DTC_SIMT_DIR}/SimtLayerTest.cu ${DTC_SIMT_DIR}/simt_preprocess.py
  COMMENT "simt: rewriting SimtLayerTest.cu")
set_source_files_properties(${_simt_sources} ${_simt_layer_test} PROPERTIES
  COMPILE_OPTIONS "-include;${DTC_SIMT_DIR}/SimtRuntime.h")
# The fibers switch stacks with _longjmp: no fortified longjmp checks there,
# and no -Wclobbered (the locals it names are references to fibers that do
# not move while a fiber is switched out).
set_source_files_properties(${DTC_SIMT_DIR}/SimtScheduler.cpp PROPERTIES
  COMPILE_OPTIONS "-U_FORTIFY_SOURCE;-Wno-clobbered")

add_library(dtcrt_cuda_simt STATIC
  ${_simt_sources}
  ${DTC_SIMT_DIR}/SimtScheduler.cpp
  ${DTC_SIMT_DIR}/SimtCudaApi.cpp
  ${DTC_SIMT_DIR}/SimtLibraries.cpp)
target_include_directories(dtcrt_cuda_simt PUBLIC ${DTCRT_CUDA_DIR}/../.. ${DTC_SIMT_DIR})
target_include_directories(dtcrt_cuda_simt SYSTEM PUBLIC ${DTCRT_CUDA_INCLUDE_DIR}
                           ${DTCRT_CUDNN_INCLUDE_DIR})
target_compile_features(dtcrt_cuda_simt PUBLIC cxx_std_17)
target_compile_definitions(dtcrt_cuda_simt PUBLIC DTCRT_WITH_CUDA=1 DTCRT_SIMT=1)
# -ffp-contract=off: no fused multiply-adds the device code did not ask for.
# Each kernel file is compiled through its preprocessed copy, which includes
# the original: GCC then takes the .cu for a header and warns that its
# structs use anonymous-namespace types (-Wsubobject-linkage), which is true
# of the copy only.
target_compile_options(dtcrt_cuda_simt PRIVATE -O2 -ffp-contract=off -Wall
                       -Wno-unused-parameter -Wno-deprecated-declarations
                       -Wno-subobject-linkage)
if(DTC_SIMT_ASAN)
  target_compile_options(dtcrt_cuda_simt PUBLIC -fsanitize=address -fno-omit-frame-pointer)
  target_link_options(dtcrt_cuda_simt PUBLIC -fsanitize=address)
endif()

add_executable(dtcrt-test-cuda-simt
  ${CMAKE_CURRENT_LIST_DIR}/../runtime/CudaKernelTestElementwise.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../runtime/CudaKernelTestGemm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../runtime/CudaKernelTestNN.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../runtime/CudaKernelTestResample.cpp
  ${_simt_layer_test})
target_link_libraries(dtcrt-test-cuda-simt PRIVATE dtcrt_cuda_simt dtcrt GTest::gtest
                      GTest::gtest_main)
target_include_directories(dtcrt-test-cuda-simt PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../runtime)
# Exact launches: one ctest per test. Wide and narrow grids: one run of the
# whole suite each, which also fails when some kernel of runtime/cuda never
# ran a block (DTC_SIMT_COVERAGE).
gtest_discover_tests(dtcrt-test-cuda-simt TEST_PREFIX "runtime.CudaSimt.exact."
                     PROPERTIES ENVIRONMENT "DTC_SIMT_GRID=exact" DISCOVERY_TIMEOUT 60)
foreach(policy wide narrow)
  add_test(NAME runtime.CudaSimt.${policy}.AllKernelsRun
           COMMAND dtcrt-test-cuda-simt --gtest_brief=1)
  set_tests_properties(runtime.CudaSimt.${policy}.AllKernelsRun PROPERTIES
                       ENVIRONMENT "DTC_SIMT_GRID=${policy};DTC_SIMT_COVERAGE=1")
endforeach()
add_dependencies(dtcrt-tests dtcrt-test-cuda-simt)

# The generated CUDA programs against these kernels (issue 19, part 3):
# DTC_CUDA_LINK_OVERRIDE=libdtc_cuda_simt_emu.a links a --target=cuda
# program with the SIMT-run kernels, the host stand-ins of cuBLASLt/cuDNN,
# the real device backend (runtime/cuda/Backend.cpp) and NCCL over the
# host communicator (test/cuda-emu/NcclOverHost.cpp). No AddressSanitizer here: the program links plainly.
add_library(dtc_cuda_simt_emu STATIC
  ${_simt_sources}
  ${DTC_SIMT_DIR}/SimtScheduler.cpp
  ${DTC_SIMT_DIR}/SimtCudaApi.cpp
  ${DTC_SIMT_DIR}/SimtLibraries.cpp
  ${DTCRT_CUDA_DIR}/Backend.cpp
  ${DTC_SIMT_DIR}/../cuda-emu/NcclOverHost.cpp)
set_target_properties(dtc_cuda_simt_emu PROPERTIES POSITION_INDEPENDENT_CODE ON
  ARCHIVE_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/test/cuda-simt)
target_include_directories(dtc_cuda_simt_emu PRIVATE ${DTCRT_CUDA_DIR}/../.. ${DTC_SIMT_DIR})
target_include_directories(dtc_cuda_simt_emu SYSTEM PRIVATE ${DTCRT_CUDA_INCLUDE_DIR}
                           ${DTCRT_CUDNN_INCLUDE_DIR})
target_compile_features(dtc_cuda_simt_emu PRIVATE cxx_std_17)
target_compile_definitions(dtc_cuda_simt_emu PRIVATE DTCRT_WITH_CUDA=1 DTCRT_SIMT=1)
target_compile_options(dtc_cuda_simt_emu PRIVATE -O2 -ffp-contract=off -Wall
                       -Wno-unused-parameter -Wno-deprecated-declarations
                       -Wno-subobject-linkage)
