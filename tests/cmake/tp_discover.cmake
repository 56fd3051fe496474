# tp_discover.cmake - script-mode front end of TpTests.cmake, for its self-tests:
#   cmake -DSOURCES=a.c,b.c -P tp_discover.cmake       prints "discovered: name;name..."
#   cmake -DSOURCES=... -DEXPECT=name,name -P ...       also fails unless exactly EXPECT
include(${CMAKE_CURRENT_LIST_DIR}/TpTests.cmake)
string(REPLACE "," ";" SOURCES "${SOURCES}")
tp_discover_tests(found ${SOURCES})
message(STATUS "discovered: ${found}")
string(REPLACE "," ";" EXPECT "${EXPECT}")
if(DEFINED EXPECT AND NOT "${found}" STREQUAL "${EXPECT}")
  message(FATAL_ERROR "discovered '${found}', expected '${EXPECT}'")
endif()
