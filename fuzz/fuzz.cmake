# Fuzz targets for every parser that sees untrusted bytes, built by isb_fuzz_target (CMakeLists.txt): with
# -DISB_FUZZ=ON (clang) libFuzzer binaries (`make fuzz`); otherwise each replays its seed corpus as a ctest test.
# A subsystem's own targets live in its cmake file, with seeds in fuzz/corpus/<name>.
foreach(target tool_input mcp rest sandbox_spec)
  isb_fuzz_target(${target} SOURCES tests/api/fake_sandboxes.cc LIBS isb_api)
endforeach()
# The exec control messages: a request as a sandbox's init reads it, an event as the daemon reads it.
isb_fuzz_target(exec_message LIBS isb_engine)
