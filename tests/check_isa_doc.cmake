# docs/isa.md must be exactly what `spyre-isa-dump --doc` generates from the instruction table.
execute_process(COMMAND ${TOOL} --doc ${KERNELS} OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "spyre-isa-dump --doc failed")
endif()
file(READ ${DOC} checked_in)
if(NOT generated STREQUAL checked_in)
  message(FATAL_ERROR "docs/isa.md is stale: regenerate with build/bin/spyre-isa-dump --doc tests/kernels > docs/isa.md")
endif()
