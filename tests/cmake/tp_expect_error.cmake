# tp_expect_error.cmake - passes only if `cmake -DSOURCES=<FIXTURE> -P tp_discover.cmake`
# fails and its output matches the regular expression ERROR:
#   cmake -DFIXTURE=file -DERROR=regex -P tp_expect_error.cmake
execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCES=${FIXTURE} -P ${CMAKE_CURRENT_LIST_DIR}/tp_discover.cmake
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "exit ${rc}; output:\n${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "discovery accepted ${FIXTURE}; it should have stopped")
endif()
# CMake wraps long messages: match against the output with each run of blanks made one space
string(REGEX REPLACE "[ \t\n]+" " " flat "${out}${err}")
if(NOT flat MATCHES "${ERROR}")
  message(FATAL_ERROR "discovery failed on ${FIXTURE} without the expected message '${ERROR}'")
endif()
