// The end of a proxy test: the proxy is given a few seconds to finish its connections, must have none left, and is
// stopped.
#pragma once

#include <unistd.h>

#include <memory>

#include <gtest/gtest.h>

#include "egress/proxy.h"

namespace isb::egress {

inline void StopProxy(std::unique_ptr<Proxy>& proxy) {
  for (int i = 0; i < 200 && proxy && proxy->stats().active != 0; ++i) ::usleep(20000);
  if (proxy) {
    EXPECT_EQ(proxy->stats().active.load(), 0u);
  }
  proxy.reset();
}

}  // namespace isb::egress
