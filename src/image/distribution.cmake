# Images from registries (issue 23): digests, references, manifests, the registry client and the blob store.
add_library(isb_image_dist STATIC
  src/image/blob_store.cc
  src/image/digest.cc
  src/image/manifest.cc
  src/image/reference.cc
  src/image/registry_auth.cc
  src/image/registry_client.cc
  src/image/registry_http.cc)
# isb_judge holds the daemon's TLS stream (egress/stream.h) and HTTP/1.1 parsers; isb_api the depth-limited JSON.
target_link_libraries(isb_image_dist PUBLIC isb_base isb_egress isb_judge isb_api OpenSSL::Crypto
                      nlohmann_json::nlohmann_json)

isb_tests(isb_image_dist_tests LIBS isb_image_dist SOURCES
  tests/image/digest_test.cc
  tests/image/reference_test.cc
  tests/image/manifest_test.cc
  tests/image/blob_store_test.cc
  tests/image/registry_auth_test.cc
  tests/image/registry_fixture.cc
  tests/image/registry_client_test.cc
  tests/image/registry_redirect_test.cc
  tests/egress/fake_chat_server.cc)
target_compile_definitions(isb_image_dist_tests PRIVATE
  ISB_MAKE_TEST_IMAGE="${CMAKE_SOURCE_DIR}/tests/image/make_test_image.sh")

# Manifests, indexes, configs and references: bytes from any registry.
isb_fuzz_target(image_manifest LIBS isb_image_dist)
