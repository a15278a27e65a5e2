# The CUDA kernel layer of libdtcrt (runtime/cuda/): dtcrt_cuda, the GPU
# counterpart of the CPU kernels, for programs compiled with --target=cuda.
# Built only when the CUDA toolkit (nvcc, cuBLASLt, cuDNN) is found under
# DTCRT_CUDA_ROOT (/usr/local/cuda); CPU-only builds skip it. Include it from
# runtime/CMakeLists.txt after CommSources.cmake:
#   include(${CMAKE_CURRENT_LIST_DIR}/CudaSources.cmake)
include_guard(GLOBAL)
set(DTCRT_CUDA_DIR ${CMAKE_CURRENT_LIST_DIR}/cuda)
set(DTCRT_CUDA_ROOT /usr/local/cuda CACHE PATH "CUDA toolkit root (for NCCL and dtcrt_cuda)")

set(_dtcrt_cuda_found OFF)
if(EXISTS ${DTCRT_CUDA_ROOT}/bin/nvcc)
  if(NOT CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_COMPILER ${DTCRT_CUDA_ROOT}/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  set(_dtcrt_lib_dirs ${DTCRT_CUDA_ROOT}/lib64 ${DTCRT_CUDA_ROOT}/lib
      ${DTCRT_CUDA_ROOT}/targets/x86_64-linux/lib)
  find_path(DTCRT_CUDA_INCLUDE_DIR cuda_runtime_api.h PATHS ${DTCRT_CUDA_ROOT}/include
            NO_DEFAULT_PATH)
  find_path(DTCRT_CUDNN_INCLUDE_DIR cudnn.h PATHS ${DTCRT_CUDA_ROOT}/include /usr/include
            /usr/include/x86_64-linux-gnu)
  find_library(DTCRT_CUDA_CUDART_LIBRARY cudart PATHS ${_dtcrt_lib_dirs} NO_DEFAULT_PATH)
  find_library(DTCRT_CUBLASLT_LIBRARY cublasLt PATHS ${_dtcrt_lib_dirs} NO_DEFAULT_PATH)
  find_library(DTCRT_CUBLAS_LIBRARY cublas PATHS ${_dtcrt_lib_dirs} NO_DEFAULT_PATH)
  find_library(DTCRT_CUDNN_LIBRARY cudnn PATHS ${_dtcrt_lib_dirs} /usr/lib/x86_64-linux-gnu)
  if(CMAKE_CUDA_COMPILER AND DTCRT_CUDA_INCLUDE_DIR AND DTCRT_CUDNN_INCLUDE_DIR
     AND DTCRT_CUDA_CUDART_LIBRARY AND DTCRT_CUBLASLT_LIBRARY AND DTCRT_CUBLAS_LIBRARY
     AND DTCRT_CUDNN_LIBRARY)
    set(_dtcrt_cuda_found ON)
  endif()
endif()

option(DTCRT_WITH_CUDA "Build the CUDA kernel layer dtcrt_cuda (needs nvcc, cuBLASLt, cuDNN)"
       ${_dtcrt_cuda_found})
if(DTCRT_WITH_CUDA AND NOT _dtcrt_cuda_found)
  message(WARNING "dtcrt: DTCRT_WITH_CUDA is ON but the CUDA toolkit (nvcc, cuBLASLt, cuDNN) "
                  "was not found under ${DTCRT_CUDA_ROOT}; skipping the CUDA runtime")
  set(DTCRT_WITH_CUDA OFF CACHE BOOL "" FORCE)
endif()

if(DTCRT_WITH_CUDA)
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "80;90")  # A100, H100/H200
  endif()
  enable_language(CUDA)
  message(STATUS "dtcrt: CUDA runtime (dtcrt_cuda) with ${CMAKE_CUDA_COMPILER}, "
                 "cuDNN ${DTCRT_CUDNN_LIBRARY}, archs ${CMAKE_CUDA_ARCHITECTURES}")
  add_library(dtcrt_cuda STATIC
    ${DTCRT_CUDA_DIR}/Context.cu
    ${DTCRT_CUDA_DIR}/Graph.cu
    ${DTCRT_CUDA_DIR}/Marks.cu
    ${DTCRT_CUDA_DIR}/Fused.cu
    ${DTCRT_CUDA_DIR}/Elementwise.cu
    ${DTCRT_CUDA_DIR}/Activation.cu
    ${DTCRT_CUDA_DIR}/Compare.cu
    ${DTCRT_CUDA_DIR}/Gemm.cu
    ${DTCRT_CUDA_DIR}/Conv.cu
    ${DTCRT_CUDA_DIR}/Pool.cu
    ${DTCRT_CUDA_DIR}/Norm.cu
    ${DTCRT_CUDA_DIR}/Softmax.cu
    ${DTCRT_CUDA_DIR}/Loss.cu
    ${DTCRT_CUDA_DIR}/Shape.cu
    ${DTCRT_CUDA_DIR}/Resample.cu
    ${DTCRT_CUDA_DIR}/Optimizer.cu
  )
  set_target_properties(dtcrt_cuda PROPERTIES
    POSITION_INDEPENDENT_CODE ON
    CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}"
    CUDA_STANDARD 17
    CUDA_STANDARD_REQUIRED ON)
  # "runtime/cuda/Kernels.h" (and the CPU header it includes for the shared
  # parameter structs) from the repository root.
  target_include_directories(dtcrt_cuda PUBLIC ${DTCRT_CUDA_DIR}/../..)
  target_include_directories(dtcrt_cuda SYSTEM PUBLIC ${DTCRT_CUDA_INCLUDE_DIR})
  target_include_directories(dtcrt_cuda SYSTEM PRIVATE ${DTCRT_CUDNN_INCLUDE_DIR})
  target_compile_features(dtcrt_cuda PUBLIC cxx_std_17)
  target_compile_definitions(dtcrt_cuda PUBLIC DTCRT_WITH_CUDA=1)
  target_compile_options(dtcrt_cuda PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-O3 -Xcompiler=-Wall -Xcompiler=-Wno-unused-parameter
      -Wno-deprecated-gpu-targets -Xcudafe=--diag_suppress=1444
      -Xcompiler=-Wno-deprecated-declarations>)
  target_link_libraries(dtcrt_cuda PUBLIC ${DTCRT_CUBLASLT_LIBRARY} ${DTCRT_CUBLAS_LIBRARY}
                        ${DTCRT_CUDNN_LIBRARY} ${DTCRT_CUDA_CUDART_LIBRARY})
elseif(_dtcrt_cuda_found)
  message(STATUS "dtcrt: DTCRT_WITH_CUDA=OFF, skipping the CUDA runtime")
else()
  message(STATUS "dtcrt: CUDA toolkit not found; skipping the CUDA runtime "
                 "(--target=cuda unavailable)")
endif()
