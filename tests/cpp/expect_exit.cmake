# Runs the CLI with bad input and checks its exit status and its one-line message.
execute_process(COMMAND ${COMMAND} --tokens 1000
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL EXPECTED_EXIT)
  message(FATAL_ERROR "expected exit ${EXPECTED_EXIT}, got ${status}")
endif()
string(REGEX MATCHALL "\n" newlines "${err}")
list(LENGTH newlines num_lines)
if(NOT num_lines EQUAL 1 OR NOT err MATCHES "^trainmem: --tokens: ")
  message(FATAL_ERROR "expected one line naming --tokens, got: ${err}")
endif()
if(NOT out STREQUAL "")
  message(FATAL_ERROR "expected nothing on stdout, got: ${out}")
endif()
