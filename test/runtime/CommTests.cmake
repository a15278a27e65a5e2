# Unit tests of the communicators (runtime/comm/): job authentication,
# stores and their limits, start-up checks,
# Gloo and shared-memory collectives and failures with real processes,
# the copy they use (copyBytes),
# subgroups (pipeline stages and replicas over one parent), the
# launcher environment and (when built) NCCL's no-GPU error. Include after
# runtime/CommSources.cmake:
#   include(${CMAKE_SOURCE_DIR}/test/runtime/CommTests.cmake)
include_guard(GLOBAL)
find_package(GTest REQUIRED)
include(GoogleTest)

set(DTCRT_COMM_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
add_executable(dtcrt_comm_tests
  ${DTCRT_COMM_TEST_DIR}/CommTestAuth.cpp
  ${DTCRT_COMM_TEST_DIR}/CommTestStore.cpp
  ${DTCRT_COMM_TEST_DIR}/CommTestEnvironment.cpp
  ${DTCRT_COMM_TEST_DIR}/CommTestGloo.cpp
  ${DTCRT_COMM_TEST_DIR}/CommTestFailure.cpp
  ${DTCRT_COMM_TEST_DIR}/CommTestShm.cpp
  ${DTCRT_COMM_TEST_DIR}/CommTestShmPointToPoint.cpp
  ${DTCRT_COMM_TEST_DIR}/CommTestSubgroup.cpp
  ${DTCRT_COMM_TEST_DIR}/CommTestCollectives.cpp
  ${DTCRT_COMM_TEST_DIR}/CommTestCopyBytes.cpp
)
if(DTCRT_WITH_NCCL)
  target_sources(dtcrt_comm_tests PRIVATE ${DTCRT_COMM_TEST_DIR}/CommTestNccl.cpp)
  target_link_libraries(dtcrt_comm_tests PRIVATE dtcrt_comm_nccl)
endif()
target_link_libraries(dtcrt_comm_tests PRIVATE dtcrt_comm GTest::gtest GTest::gtest_main)
# Each test forks its ranks and guards itself with alarm(); the suite runs in
# about a minute (CommTestCollectives.cpp: 60 jobs of 2 to 4 ranks).
gtest_discover_tests(dtcrt_comm_tests TEST_PREFIX "runtime.comm." DISCOVERY_TIMEOUT 60
                     PROPERTIES TIMEOUT 60)
