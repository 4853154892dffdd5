# Secrets on the wire: placeholders swapped into requests and values scrubbed from responses by the egress proxy's
# message filter, over a streaming multi-needle replacer and the HTTP content codings (zlib, brotli, zstd: static
# archives, as the isb binary is linked statically).
find_library(ZLIB_STATIC NAMES libz.a z REQUIRED)
find_library(BROTLIENC_STATIC NAMES libbrotlienc.a brotlienc REQUIRED)
find_library(BROTLIDEC_STATIC NAMES libbrotlidec.a brotlidec REQUIRED)
find_library(BROTLICOMMON_STATIC NAMES libbrotlicommon.a brotlicommon REQUIRED)
find_library(ZSTD_STATIC NAMES libzstd.a zstd REQUIRED)
find_path(BROTLI_INCLUDE brotli/decode.h REQUIRED)
find_path(ZSTD_INCLUDE zstd.h REQUIRED)

add_library(isb_secrets_wire STATIC
  src/secrets/stream_replace.cc
  src/secrets/secret_forms.cc
  src/secrets/content_coding.cc
  src/secrets/secrets_filter.cc)
target_include_directories(isb_secrets_wire PRIVATE ${BROTLI_INCLUDE} ${ZSTD_INCLUDE})
target_link_libraries(isb_secrets_wire PUBLIC isb_http1 isb_egress isb_base
                      ${BROTLIENC_STATIC} ${BROTLIDEC_STATIC} ${BROTLICOMMON_STATIC} ${ZSTD_STATIC} ${ZLIB_STATIC})

isb_tests(isb_secrets_wire_tests LIBS isb_secrets_wire isb_proxy SOURCES
  tests/secrets/stream_replace_test.cc
  tests/secrets/secret_forms_test.cc
  tests/secrets/content_coding_test.cc
  tests/secrets/secrets_filter_test.cc
  tests/secrets/secrets_filter_proxy_test.cc
  tests/egress/tls_origin.cc
  tests/net/loopback.cc)

# The substitution engine (a stream holding placeholders, cut anywhere, against a one-shot reference), the scrubber
# (values in their forms) and the content-coding decoders on arbitrary bytes.
isb_fuzz_target(substitute LIBS isb_secrets_wire)
isb_fuzz_target(scrub LIBS isb_secrets_wire)
isb_fuzz_target(content_coding LIBS isb_secrets_wire)
