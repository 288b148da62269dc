# Checks that the runtime's thread-local block (its PT_TLS segment) stays
# small enough for the dynamic loader to place it in the static TLS space it
# keeps spare for libraries loaded with dlopen, as the Python package loads
# libdeepcontext.so. Past that, every thread-local read on the per-op and
# per-launch paths becomes a call into the loader (_dl_tlsdesc_dynamic);
# see -mtls-dialect in CMakeLists.txt. glibc keeps 512 bytes of that space
# for such libraries by default (the rtld.optional_static_tls tunable).
#
#   cmake -DREADELF=<readelf> -DLIBRARY=<libdeepcontext.so> [-DLIMIT=512] -P check_tls_size.cmake
#
# Prints "tls: N bytes (limit L)" and fails when N > L.
if(NOT READELF OR NOT LIBRARY)
  message(FATAL_ERROR "pass -DREADELF=<readelf> -DLIBRARY=<shared library>")
endif()
if(NOT LIMIT)
  set(LIMIT 512)
endif()
execute_process(COMMAND ${READELF} -lW ${LIBRARY}
                OUTPUT_VARIABLE _headers RESULT_VARIABLE _result)
if(NOT _result EQUAL 0)
  message(FATAL_ERROR "${READELF} -lW ${LIBRARY} failed (${_result})")
endif()
# "  TLS  0xOFFSET 0xVIRT 0xPHYS 0xFILESIZ 0xMEMSIZ R 0xALIGN"
set(_size 0)
if(_headers MATCHES "\n[ \t]*TLS[ \t]+0x[0-9a-f]+[ \t]+0x[0-9a-f]+[ \t]+0x[0-9a-f]+[ \t]+0x[0-9a-f]+[ \t]+0x([0-9a-f]+)")
  math(EXPR _size "0x${CMAKE_MATCH_1}")
endif()
message("tls: ${_size} bytes (limit ${LIMIT})")
if(_size GREATER LIMIT)
  message(FATAL_ERROR "the thread-locals of ${LIBRARY} take ${_size} bytes, more than "
          "${LIMIT}: move large per-thread state to the heap (runtime/common/thread_instance.h)")
endif()
