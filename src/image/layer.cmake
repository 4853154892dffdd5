# Image layers (branch `layers`): byte sources, gzip/zstd decompression, the tar reader, the layer unpacker that
# places an untrusted tar below a directory and never outside it, and the flattener that merges stored layers into
# one. zlib and libzstd as static archives, as the isb
# binary is linked statically (found here too, so this file stands on its own).
find_library(ZLIB_STATIC NAMES libz.a z REQUIRED)
find_library(ZSTD_STATIC NAMES libzstd.a zstd REQUIRED)
find_path(ZSTD_INCLUDE zstd.h REQUIRED)

add_library(isb_image_layer STATIC
  src/image/byte_source.cc
  src/image/decompress.cc
  src/image/tar_reader.cc
  src/image/layer_unpack.cc
  src/image/layer_flatten.cc
  src/image/layered_file.cc)
target_include_directories(isb_image_layer PRIVATE ${ZSTD_INCLUDE})
target_link_libraries(isb_image_layer PUBLIC isb_base ${ZSTD_STATIC} ${ZLIB_STATIC})

isb_tests(isb_image_layer_tests LIBS isb_image_layer SOURCES
  tests/image/byte_source_test.cc
  tests/image/decompress_test.cc
  tests/image/tar_reader_test.cc
  tests/image/layer_unpack_test.cc
  tests/image/layer_flatten_test.cc
  tests/image/layered_file_test.cc
  tests/image/layer_unpack_escape_test.cc
  tests/image/real_tar_test.cc)

# The tar reader over arbitrary bytes; the unpacker over arbitrary tars, each into a fresh directory, checking that
# nothing appears beside it.
isb_fuzz_target(tar_reader LIBS isb_image_layer)
isb_fuzz_target(layer_unpack LIBS isb_image_layer)
