// `isb serve [--listen ADDR:PORT] [--state-dir DIR] [--serve-socket PATH]`
#include "cli/serve_cmd.h"

#include <memory>

#include "base/units.h"
#include "daemon/serve.h"

namespace isb::cli {

void AddServeCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<daemon::ServeOptions>();
  auto reap = std::make_shared<std::string>("60s");
  auto* cmd = app.add_subcommand("serve", "Run the daemon: sandboxes as tools over MCP, REST and a unix socket");
  cmd->add_option("--listen", opts->listen, "Loopback or tailnet ADDR:PORT for HTTP")->capture_default_str();
  cmd->add_option("--state-dir", opts->state_dir, "Where state lives (SQLite, sandboxes)")->capture_default_str();
  cmd->add_option("--serve-socket", opts->serve_socket, "The unix socket (default <state-dir>/api/isb.sock)");
  cmd->add_option("--sandbox-subnet", opts->sandbox_subnet, "IPv4 subnet for sandbox veths, a /30 each")
      ->capture_default_str();
  cmd->add_option("--egress-pin", opts->egress_pins,
                  "NAME=IP[:PORT]: dial NAME at IP (the only way to a private address); repeatable");
  cmd->add_option("--egress-ca", opts->egress_ca,
                  "PEM FILE of CA certificates trusted for intercepted origins, besides the system's");
  cmd->add_option("--egress-table", opts->egress_table, "The nftables table (and veth prefix) of this daemon")
      ->capture_default_str();
  cmd->add_option("--reap-interval", *reap, "How often the reaper looks for expired and idle sandboxes")
      ->capture_default_str();
  cmd->callback([opts, reap, exit_code] {
    auto interval = ParseDuration(*reap);
    if (!interval.ok() || interval->count() < 1000) {
      std::fprintf(stderr, "isb serve: --reap-interval: %s\n",
                   interval.ok() ? "must be at least 1s" : interval.error().message.c_str());
      *exit_code = 2;
      return;
    }
    opts->reap_interval = std::chrono::duration_cast<std::chrono::seconds>(*interval);
    *exit_code = daemon::Serve(*opts);
  });
}

}  // namespace isb::cli
