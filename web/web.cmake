# The web UI: npm installs the pinned tools (web/package-lock.json) into the build tree, esbuild bundles web/src into
# one script, one stylesheet and index.html, and web/embed.mjs turns those into a C++ source of byte arrays that
# only the isb binary links (isb_web_assets): nothing is fetched at run time.
find_program(ISB_NODE node REQUIRED)
find_program(ISB_NPM npm REQUIRED)

# isb_npm_ci(SOURCE_DIR DEST_DIR COMMENT [npm ci flags...]): SOURCE_DIR's package.json and package-lock.json installed
# into DEST_DIR by npm ci when either changes; what depends on DEST_DIR/node_modules/.package-lock.json waits for it.
function(isb_npm_ci source_dir dest_dir comment)
  add_custom_command(
    OUTPUT ${dest_dir}/node_modules/.package-lock.json
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dest_dir}
    COMMAND ${CMAKE_COMMAND} -E copy ${source_dir}/package.json ${source_dir}/package-lock.json ${dest_dir}/
    COMMAND ${ISB_NPM} ci --prefix ${dest_dir} ${ARGN} --no-audit --no-fund --loglevel=error
    DEPENDS ${source_dir}/package.json ${source_dir}/package-lock.json
    COMMENT "npm ci (${comment})")
endfunction()

set(ISB_WEB_NPM_DIR ${CMAKE_BINARY_DIR}/web/npm)
set(ISB_WEB_BUNDLE_DIR ${CMAKE_BINARY_DIR}/web/bundle)
set(ISB_WEB_ASSETS_CC ${CMAKE_BINARY_DIR}/generated/web_assets.cc)
isb_npm_ci(${CMAKE_SOURCE_DIR}/web ${ISB_WEB_NPM_DIR} "web UI build tools")
file(GLOB ISB_WEB_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/web/src/*)
add_custom_command(
  OUTPUT ${ISB_WEB_ASSETS_CC}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/generated
  COMMAND ${ISB_NODE} ${CMAKE_SOURCE_DIR}/web/build.mjs ${ISB_WEB_BUNDLE_DIR} ${ISB_WEB_NPM_DIR}/node_modules
  COMMAND ${ISB_NODE} ${CMAKE_SOURCE_DIR}/web/embed.mjs ${ISB_WEB_BUNDLE_DIR} ${ISB_WEB_ASSETS_CC}
  DEPENDS ${ISB_WEB_SOURCES} ${CMAKE_SOURCE_DIR}/web/build.mjs ${CMAKE_SOURCE_DIR}/web/tsconfig.json ${CMAKE_SOURCE_DIR}/web/embed.mjs
          ${ISB_WEB_NPM_DIR}/node_modules/.package-lock.json
  COMMENT "Bundling and embedding the web UI")
add_library(isb_web_assets STATIC ${ISB_WEB_ASSETS_CC})
target_link_libraries(isb_web_assets PUBLIC isb_api)
