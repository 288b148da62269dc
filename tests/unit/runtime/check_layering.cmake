# Checks that no dependency arrow of the GPU runtime points upward:
#
#   runtime/profiler -> runtime/cupti (a vendor backend) -> runtime/gpu
#
# runtime/gpu (the vendor-neutral core) includes from this project only
# runtime/gpu/ and the header-only leaves runtime/common/ and runtime/cpu/,
# and no vendor header; runtime/cupti
# includes nothing from runtime/profiler/ (it feeds the gpu::ContextSink
# the profiler hands it). Run as
#
#   cmake -DROOT=<source tree> -P check_layering.cmake
#
# Prints every offending include and "layering: N violation(s)", and fails
# when N > 0.
if(NOT ROOT)
  message(FATAL_ERROR "pass -DROOT=<source tree>")
endif()

file(GLOB_RECURSE _files RELATIVE ${ROOT}
     ${ROOT}/runtime/gpu/*.h ${ROOT}/runtime/gpu/*.cc
     ${ROOT}/runtime/cupti/*.h ${ROOT}/runtime/cupti/*.cc)
list(SORT _files)
set(_violations 0)
foreach(_file IN LISTS _files)
  file(STRINGS ${ROOT}/${_file} _includes REGEX "^[ \t]*#[ \t]*include")
  foreach(_line IN LISTS _includes)
    set(_why "")
    if(_file MATCHES "^runtime/gpu/")
      if(_line MATCHES "[\"<](runtime|format|tools|include|deepcontext|tests)/"
         AND NOT _line MATCHES "[\"<]runtime/(gpu|common|cpu)/")
        set(_why "the GPU core includes only runtime/gpu/, runtime/common/ and runtime/cpu/")
      elseif(_line MATCHES "<(cupti|cuda|hip|roc)[^>]*>")
        set(_why "the GPU core includes no vendor header")
      endif()
    elseif(_file MATCHES "^runtime/cupti/")
      if(_line MATCHES "runtime/profiler/")
        set(_why "a GPU backend does not include the profiler")
      endif()
    endif()
    if(_why)
      math(EXPR _violations "${_violations} + 1")
      string(STRIP "${_line}" _line)
      message("${_file}: ${_line}: ${_why}")
    endif()
  endforeach()
endforeach()
message("layering: ${_violations} violation(s)")
if(_violations GREATER 0)
  message(FATAL_ERROR "upward or sideways includes in the GPU runtime")
endif()
