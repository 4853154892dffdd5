# The daemon: state, sandboxes as long-lived objects, and `isb serve` wiring.
add_library(isb_store STATIC src/store/db.cc src/store/migrations.cc)
find_package(Threads REQUIRED)
target_link_libraries(isb_store PUBLIC isb_base ${SQLITE_LIB} Threads::Threads m dl)

add_library(isb_daemon STATIC src/daemon/sandbox_manager.cc src/daemon/egress_service.cc src/daemon/port_publisher.cc
            src/daemon/trust_bundle.cc src/daemon/sandbox_snapshot.cc src/daemon/disk_layer.cc src/daemon/teardown_queue.cc
            src/daemon/refill_policy.cc src/daemon/egress_claims.cc
            src/daemon/sandbox_files.cc src/daemon/sandbox_pool.cc src/daemon/host_paths.cc src/daemon/sandbox_adoption.cc
            src/daemon/sandbox_terminals.cc src/daemon/sandbox_logs.cc src/daemon/sandbox_detached.cc
            src/daemon/sandbox_network.cc src/daemon/secret_broker.cc
            src/daemon/lifecycle_events.cc src/daemon/usage_sampler.cc src/daemon/netns_dial.cc
            src/daemon/idle_watch.cc)
target_link_libraries(isb_daemon PUBLIC isb_engine isb_spec isb_store isb_net isb_proxy isb_egress isb_judge isb_audit
                      isb_secrets_store isb_secrets_wire nlohmann_json::nlohmann_json)

add_executable(isb_daemon_tests tests/store/db_test.cc tests/daemon/sandbox_manager_test.cc
               tests/daemon/trust_bundle_test.cc tests/daemon/port_publisher_test.cc tests/daemon/disk_layer_test.cc
               tests/daemon/teardown_queue_test.cc tests/daemon/refill_policy_test.cc tests/daemon/preview_proxy_test.cc
               tests/daemon/idle_watch_test.cc tests/daemon/sandbox_logs_test.cc
               tests/daemon/fake_runtime.cc tests/daemon/manager_runtime_test.cc tests/daemon/runtime_migration_test.cc
               tests/net/loopback.cc)
target_link_libraries(isb_daemon_tests PRIVATE isb_daemon GTest::gtest_main)
target_include_directories(isb_daemon_tests PRIVATE ${CMAKE_SOURCE_DIR}/tests)
gtest_discover_tests(isb_daemon_tests DISCOVERY_MODE PRE_TEST)

# Egress for real (veths, nftables, proxy, DNS, curl and dig), inside network namespaces of the test's own.
isb_tests(isb_egress_service_tests LIBS isb_daemon LABELS net SOURCES tests/daemon/egress_service_test.cc
          tests/egress/fake_chat_server.cc)

if(TARGET isb_api)
  target_sources(isb_daemon PRIVATE src/daemon/serve.cc src/daemon/serve_secrets.cc src/daemon/audit_writer.cc src/daemon/serve_images.cc
                 src/daemon/client_documents.cc src/daemon/preview_proxy.cc src/daemon/preview_service.cc
                 src/daemon/daemon_metrics.cc)
  target_link_libraries(isb_daemon PUBLIC isb_http isb_tools)
  # The daemon's secrets: the broker between store and proxy filter, and what isb serve does with leaks and uses.
  isb_tests(isb_daemon_secrets_tests LIBS isb_daemon SOURCES tests/daemon/secret_broker_test.cc
            tests/daemon/serve_secrets_test.cc tests/daemon/audit_writer_test.cc)
  # How OAuth clients' metadata documents are fetched: the addresses refused, the flags.
  isb_tests(isb_client_documents_tests LIBS isb_daemon SOURCES tests/daemon/client_documents_test.cc)
  # The preview watch's catch-up: which previews end when events were lost.
  isb_tests(isb_preview_service_tests LIBS isb_daemon SOURCES tests/daemon/preview_service_test.cc)
endif()
