# The generated reference: docs/tools.md from the tool registry, docs/cli.md from the CLI's flag definitions.
add_library(isb_docs_render STATIC src/docs/tool_docs.cc src/docs/cli_docs.cc src/docs/docs_registry.cc)
target_link_libraries(isb_docs_render PUBLIC isb_tools isb_audit isb_identity isb_secrets_store isb_store
                      CLI11::CLI11)

add_executable(isb_docs src/docs/main.cc)
target_link_libraries(isb_docs PRIVATE isb_docs_render isb_cli)

# `make docs` (the Makefile) runs this target: the two pages written into the source tree.
add_custom_target(docs COMMAND isb_docs ${CMAKE_SOURCE_DIR}/docs
                  COMMENT "docs/tools.md and docs/cli.md from the registry and the flags")

# The committed pages must be what isb_docs generates now; scripts/check_docs.sh names the stale page and the fix.
add_test(NAME docs_up_to_date COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/check_docs.sh $<TARGET_FILE:isb_docs>
                                      ${CMAKE_SOURCE_DIR}/docs)
add_test(NAME docs_check_names_a_stale_page
         COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/check_docs.sh --self-test $<TARGET_FILE:isb_docs>
                 ${CMAKE_SOURCE_DIR}/docs)
# Every relative link in README.md and docs/ leads to a file that exists.
add_test(NAME docs_links_resolve COMMAND python3 ${CMAKE_SOURCE_DIR}/scripts/check_links.py ${CMAKE_SOURCE_DIR})

isb_tests(isb_docs_tests LIBS isb_docs_render isb_cli SOURCES tests/docs/docs_test.cc)
