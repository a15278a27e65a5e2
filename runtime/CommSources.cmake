# The communicators of libdtcrt (runtime/comm/): rendezvous stores, start-up
# checks, Gloo over TCP and shared memory for CPU tensors, subgroups over
# another communicator's ranks (dtcrt_comm) and, when CUDA and NCCL
# are found, NCCL for GPU tensors (dtcrt_comm_nccl, linked into dtcrt_comm's
# users through DTCRT_WITH_NCCL). Include it from runtime/CMakeLists.txt:
#   include(${CMAKE_CURRENT_LIST_DIR}/CommSources.cmake)
# Needs Debian's libgloo-dev (/usr/lib/libgloo.so, /usr/include/gloo) and
# libssl-dev (libcrypto).
include_guard(GLOBAL)
set(DTCRT_COMM_DIR ${CMAKE_CURRENT_LIST_DIR}/comm)

find_package(Threads REQUIRED)
find_library(DTCRT_GLOO_LIBRARY gloo PATHS /usr/lib NO_DEFAULT_PATH)
find_library(DTCRT_GLOO_LIBRARY gloo REQUIRED)
find_path(DTCRT_GLOO_INCLUDE_DIR gloo/rendezvous/context.h PATHS /usr/include REQUIRED)
# HMAC-SHA256 for the store's challenge-response (Debian's libssl-dev).
find_package(OpenSSL REQUIRED COMPONENTS Crypto)

add_library(dtcrt_comm STATIC
  ${DTCRT_COMM_DIR}/Auth.cpp
  ${DTCRT_COMM_DIR}/Communicator.cpp
  ${DTCRT_COMM_DIR}/Store.cpp
  ${DTCRT_COMM_DIR}/TcpStore.cpp
  ${DTCRT_COMM_DIR}/Environment.cpp
  ${DTCRT_COMM_DIR}/Rendezvous.cpp
  ${DTCRT_COMM_DIR}/GlooCommunicator.cpp
  ${DTCRT_COMM_DIR}/Reduction.cpp
  ${DTCRT_COMM_DIR}/ShmBarrier.cpp
  ${DTCRT_COMM_DIR}/ShmCollectives.cpp
  ${DTCRT_COMM_DIR}/ShmCommunicator.cpp
  ${DTCRT_COMM_DIR}/ShmPointToPoint.cpp
  ${DTCRT_COMM_DIR}/ShmSegment.cpp
  ${DTCRT_COMM_DIR}/Connect.cpp
  ${DTCRT_COMM_DIR}/Subgroup.cpp
)
set_target_properties(dtcrt_comm PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(dtcrt_comm PUBLIC ${DTCRT_COMM_DIR}/../..)
target_include_directories(dtcrt_comm SYSTEM PRIVATE ${DTCRT_GLOO_INCLUDE_DIR})
target_compile_features(dtcrt_comm PUBLIC cxx_std_17)
target_compile_options(dtcrt_comm PRIVATE -Wall -Wextra -Wno-unused-parameter)
target_link_libraries(dtcrt_comm PUBLIC ${DTCRT_GLOO_LIBRARY} OpenSSL::Crypto Threads::Threads)

# NCCL: compiled only when the CUDA runtime and NCCL are installed.
set(DTCRT_CUDA_ROOT /usr/local/cuda CACHE PATH "CUDA toolkit root (for NCCL)")
find_path(DTCRT_NCCL_INCLUDE_DIR nccl.h PATHS ${DTCRT_CUDA_ROOT}/include NO_DEFAULT_PATH)
find_path(DTCRT_CUDART_INCLUDE_DIR cuda_runtime.h PATHS ${DTCRT_CUDA_ROOT}/include NO_DEFAULT_PATH)
find_library(DTCRT_NCCL_LIBRARY nccl PATHS ${DTCRT_CUDA_ROOT}/lib ${DTCRT_CUDA_ROOT}/lib64
             NO_DEFAULT_PATH)
find_library(DTCRT_CUDART_LIBRARY cudart PATHS ${DTCRT_CUDA_ROOT}/lib64 ${DTCRT_CUDA_ROOT}/lib
             NO_DEFAULT_PATH)
if(DTCRT_NCCL_INCLUDE_DIR AND DTCRT_CUDART_INCLUDE_DIR AND DTCRT_NCCL_LIBRARY
   AND DTCRT_CUDART_LIBRARY)
  set(_dtcrt_nccl_found ON)
else()
  set(_dtcrt_nccl_found OFF)
endif()
option(DTCRT_WITH_NCCL "Build the NCCL communicator (needs CUDA and NCCL)" ${_dtcrt_nccl_found})
if(DTCRT_WITH_NCCL AND NOT _dtcrt_nccl_found)
  message(WARNING "dtcrt: DTCRT_WITH_NCCL is ON but NCCL/CUDA were not found under "
                  "${DTCRT_CUDA_ROOT}; skipping the NCCL communicator")
  set(DTCRT_WITH_NCCL OFF CACHE BOOL "" FORCE)
endif()
if(DTCRT_WITH_NCCL)
  message(STATUS "dtcrt: NCCL ${DTCRT_NCCL_LIBRARY}")
  # A library of its own: CPU programs link dtcrt_comm and never load CUDA.
  add_library(dtcrt_comm_nccl STATIC ${DTCRT_COMM_DIR}/NcclCommunicator.cpp)
  set_target_properties(dtcrt_comm_nccl PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(dtcrt_comm_nccl SYSTEM PUBLIC ${DTCRT_NCCL_INCLUDE_DIR}
                             ${DTCRT_CUDART_INCLUDE_DIR})
  target_compile_definitions(dtcrt_comm_nccl PUBLIC DTCRT_WITH_NCCL=1)
  target_compile_options(dtcrt_comm_nccl PRIVATE -Wall -Wextra -Wno-unused-parameter)
  target_link_libraries(dtcrt_comm_nccl PUBLIC dtcrt_comm ${DTCRT_NCCL_LIBRARY}
                        ${DTCRT_CUDART_LIBRARY})
elseif(_dtcrt_nccl_found)
  message(STATUS "dtcrt: DTCRT_WITH_NCCL=OFF, skipping the NCCL communicator")
else()
  message(STATUS "dtcrt: NCCL not found, skipping the NCCL communicator")
endif()
