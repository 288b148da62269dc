# Runs one command and checks its exit status and output.
#   -DCOMMAND="prog|arg1|arg2"   the command, arguments separated by '|'
#   -DEXPECT_RC=N                the exit status it must return
#   -DSTDOUT_MATCH=regex ...     optional; up to STDOUT_MATCH3 / STDERR_MATCH3
#   -DSTDOUT_EMPTY=ON            optional; stdout must be empty
#   -DSTDOUT_NOT_MATCH=regex     optional; stdout must not match
string(REPLACE "|" ";" command "${COMMAND}")
execute_process(COMMAND ${command}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(failed FALSE)
if(NOT rc STREQUAL EXPECT_RC)
  message(SEND_ERROR "exit status ${rc}, expected ${EXPECT_RC}")
  set(failed TRUE)
endif()
foreach(stream STDOUT STDERR)
  if(stream STREQUAL "STDOUT")
    set(text "${out}")
  else()
    set(text "${err}")
  endif()
  foreach(suffix "" 2 3)
    set(pattern "${${stream}_MATCH${suffix}}")
    if(pattern AND NOT text MATCHES "${pattern}")
      message(SEND_ERROR "${stream} does not match: ${pattern}")
      set(failed TRUE)
    endif()
  endforeach()
endforeach()
if(STDOUT_NOT_MATCH AND out MATCHES "${STDOUT_NOT_MATCH}")
  message(SEND_ERROR "stdout matches: ${STDOUT_NOT_MATCH}")
  set(failed TRUE)
endif()
if(STDOUT_EMPTY AND NOT out STREQUAL "")
  message(SEND_ERROR "stdout should be empty")
  set(failed TRUE)
endif()
if(failed)
  message(FATAL_ERROR "command: ${command}\n--- stdout:\n${out}--- stderr:\n${err}")
endif()
