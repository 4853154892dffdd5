# An org's images: records per org and layers shared by all (image_store), and how images come and go — pulled
# (registry client of distribution.cmake, unpacker of layer.cmake), imported, exported, snapshotted.
add_library(isb_image STATIC
  src/image/image_store.cc
  src/image/image_service.cc
  src/image/image_pull.cc
  src/image/image_import.cc
  src/image/layer_store_io.cc
  src/image/layer_writer.cc
  src/image/tar_writer.cc)
target_link_libraries(isb_image PUBLIC isb_image_dist isb_image_layer isb_base nlohmann_json::nlohmann_json
                      OpenSSL::Crypto ${ZLIB_STATIC} Threads::Threads)

# The image tools over the service: the api layer's registry and schemas, apart so the api library needs no images.
add_library(isb_image_api STATIC src/api/image_tools.cc src/api/image_quota.cc)
target_link_libraries(isb_image_api PUBLIC isb_api isb_image)

isb_tests(isb_image_tests LIBS isb_image_api SOURCES
  tests/image/image_store_test.cc
  tests/image/image_quota_test.cc
  tests/image/image_resolve_test.cc
  tests/image/layer_writer_test.cc)
