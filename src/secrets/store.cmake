# The secrets store: age v1 files (isb's own implementation over OpenSSL), one per secret version, per org, under
# <state>/secrets; the daemon's identity. OpenSSL linked statically, as the isb binary is.
add_library(isb_secrets_store STATIC
  src/secrets/age.cc
  src/secrets/age_bech32.cc
  src/secrets/age_crypto.cc
  src/secrets/age_header.cc
  src/secrets/age_identity.cc
  src/secrets/age_stream.cc
  src/secrets/daemon_identity.cc
  src/secrets/fork_wiped_bytes.cc
  src/secrets/secret_bytes.cc
  src/secrets/secret_file_binding.cc
  src/secrets/secret_store.cc
  src/secrets/secret_store_files.cc
  src/secrets/secret_store_limits.cc
  src/secrets/secret_store_meta.cc)
target_link_libraries(isb_secrets_store PUBLIC isb_base nlohmann_json::nlohmann_json OpenSSL::Crypto Threads::Threads
                      ${CMAKE_DL_LIBS})

isb_tests(isb_secrets_store_tests LIBS isb_secrets_store SOURCES
  tests/secrets/age_test.cc
  tests/secrets/daemon_identity_test.cc
  tests/secrets/secret_store_test.cc
  tests/secrets/secret_store_policy_test.cc
  tests/secrets/fork_wiped_bytes_test.cc)

# The header of an age file handed to `isb secret import`: untrusted bytes.
isb_fuzz_target(age_header LIBS isb_secrets_store)
