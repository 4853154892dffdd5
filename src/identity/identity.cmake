# Identity: users, orgs, roles and scopes, bearer secrets, passwords, sessions, sign-in rate limits.
# Static archives first: the isb binary links statically.
find_library(SODIUM_LIB NAMES libsodium.a sodium REQUIRED)
find_path(SODIUM_INCLUDE sodium.h REQUIRED)

add_library(isb_identity STATIC
  src/identity/roles.cc
  src/identity/tokens.cc
  src/identity/passwords.cc
  src/identity/rate_limit.cc
  src/identity/names.cc
  src/identity/principal.cc
  src/identity/users.cc
  src/identity/orgs.cc
  src/identity/token_store.cc
  src/identity/sessions.cc
  src/identity/invitations.cc
  src/identity/setup.cc
  src/identity/oauth_grants.cc
  src/identity/store.cc)
target_link_libraries(isb_identity PUBLIC isb_base isb_store ${SODIUM_LIB} OpenSSL::Crypto)
target_include_directories(isb_identity PUBLIC ${SODIUM_INCLUDE})

isb_tests(isb_identity_tests LIBS isb_identity SOURCES
  tests/identity/roles_test.cc
  tests/identity/tokens_test.cc
  tests/identity/passwords_test.cc
  tests/identity/rate_limit_test.cc
  tests/identity/users_test.cc
  tests/identity/orgs_test.cc
  tests/identity/token_store_test.cc
  tests/identity/oauth_grants_test.cc
  tests/identity/sessions_test.cc
  tests/identity/onboarding_test.cc
  tests/identity/at_rest_test.cc
  tests/identity/sign_in_timing_test.cc)

# Parsers of what callers send: bearer secrets, roles, scopes.
isb_fuzz_target(identity LIBS isb_identity)
