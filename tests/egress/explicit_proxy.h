// Tests of the explicit proxy port (where HTTP_PROXY points): a proxy whose one listening port is also that port.
#pragma once

#include <memory>

#include "egress/proxy.h"

namespace isb::egress {

// Starts a proxy with `options` and `hooks` on a free port that is also its explicit port; `options` keeps it.
inline Result<std::unique_ptr<Proxy>> StartOnExplicitPort(ProxyOptions& options, const ProxyHooks& hooks) {
  {
    Result<std::unique_ptr<Proxy>> probe = Proxy::Start(options, hooks);
    if (!probe.ok()) return probe.error();
    options.port = options.explicit_port = (*probe)->port();
  }
  return Proxy::Start(options, hooks);
}

}  // namespace isb::egress
