# Fuzz targets for every parser that sees untrusted bytes. With -DISB_FUZZ=ON (clang) they are libFuzzer
# binaries (`make fuzz`); otherwise each replays its seed corpus as a ctest test. A subsystem's own targets live in its
# cmake file, named <name>_fuzz with seeds in fuzz/corpus/<name>, and join fuzz_targets.
foreach(target tool_input mcp rest)
  if(ISB_FUZZ)
    add_executable(${target}_fuzz fuzz/${target}_fuzz.cc tests/api/fake_sandboxes.cc)
    target_compile_options(${target}_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(${target}_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  else()
    add_executable(${target}_fuzz fuzz/${target}_fuzz.cc fuzz/standalone_main.cc tests/api/fake_sandboxes.cc)
    add_test(NAME fuzz_corpus_${target} COMMAND ${target}_fuzz ${CMAKE_SOURCE_DIR}/fuzz/corpus/${target})
  endif()
  target_include_directories(${target}_fuzz PRIVATE ${CMAKE_SOURCE_DIR}/tests ${CMAKE_SOURCE_DIR}/fuzz)
  target_link_libraries(${target}_fuzz PRIVATE isb_api)
  add_dependencies(fuzz_targets ${target}_fuzz)
endforeach()
