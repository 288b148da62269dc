# Runs one command and compares its stdout with a golden file.
#   -DCOMMAND="prog|arg1|arg2"   the command, arguments separated by '|'
#   -DWORKDIR=dir                where it runs (profile paths in the output
#                                are relative to it)
#   -DGOLDEN=file                the expected stdout
# With DEEPCONTEXT_UPDATE_GOLDENS=1 in the environment the golden file is
# rewritten from the output instead (review the diff before committing):
#   DEEPCONTEXT_UPDATE_GOLDENS=1 ctest --test-dir build -R report_golden
string(REPLACE "|" ";" command "${COMMAND}")
execute_process(COMMAND ${command} WORKING_DIRECTORY "${WORKDIR}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit status ${rc}\n--- stderr:\n${err}")
endif()
if("$ENV{DEEPCONTEXT_UPDATE_GOLDENS}" STREQUAL "1")
  file(WRITE "${GOLDEN}" "${out}")
  message(STATUS "updated ${GOLDEN}")
  return()
endif()
file(READ "${GOLDEN}" expected)
if(NOT out STREQUAL expected)
  file(WRITE "${GOLDEN}.actual" "${out}")
  execute_process(COMMAND diff -u "${GOLDEN}" "${GOLDEN}.actual"
                  OUTPUT_VARIABLE diff)
  file(REMOVE "${GOLDEN}.actual")
  message(FATAL_ERROR "output differs from ${GOLDEN} "
          "(DEEPCONTEXT_UPDATE_GOLDENS=1 regenerates it):\n${diff}")
endif()
