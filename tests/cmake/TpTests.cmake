# TpTests.cmake - finds the TEST(name) cases in test sources (tests/harness.h), loudly.
#
# tp_discover_tests(<out_var> <source>...) sets out_var to the names of the TEST(...) lines
# of the sources, in order. A TEST line is one whose first word is TEST followed by "(",
# leading blanks allowed. The configure stops (FATAL_ERROR) on a name that is not lowercase
# [a-z0-9_] (CTest names and `<binary> name` must match what the harness registers) and on a
# name that appears twice. Tests made by other macros are not seen here; the registry_<binary>
# CTest cases (tp_check_registry.cmake) catch those by comparing with `<binary> --list`.
#
# Used by tests/CMakeLists.txt and, in script mode, by tp_discover.cmake (its self-tests).

function(tp_discover_tests out)
  set(names)
  set(where)
  foreach(src ${ARGN})
    if(NOT EXISTS "${src}")
      message(FATAL_ERROR "${src}: no such test source")
    endif()
    # every line that starts (after blanks) with TEST and "(": the name is validated below
    file(STRINGS "${src}" lines REGEX "^[ \t]*TEST[ \t]*\\(")
    foreach(line IN LISTS lines)
      # a line with ";" comes back as several list items: only the one with TEST counts
      if(NOT line MATCHES "^[ \t]*TEST[ \t]*\\(")
        continue()
      endif()
      if(line MATCHES "^[ \t]*TEST[ \t]*\\(([^)]*)\\)")
        string(STRIP "${CMAKE_MATCH_1}" name)
      else()
        message(FATAL_ERROR "${src}: TEST line '${line}' does not hold TEST(name) on one line; "
                            "CTest would not run it")
      endif()
      if(NOT name MATCHES "^[a-z0-9_]+$")
        message(FATAL_ERROR "${src}: TEST name '${name}' is not lowercase [a-z0-9_] "
                            "(line: '${line}'); CTest would not run it")
      endif()
      list(FIND names "${name}" seen)
      if(NOT seen EQUAL -1)
        list(GET where ${seen} first)
        message(FATAL_ERROR "${src}: TEST(${name}) appears twice (first in ${first})")
      endif()
      list(APPEND names "${name}")
      list(APPEND where "${src}")
    endforeach()
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()
