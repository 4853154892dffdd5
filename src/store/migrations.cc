// Schema migrations, in order.
#include "store/migrations.h"

namespace isb::store {

const std::vector<std::string>& Migrations() {
  static const std::vector<std::string> m = {
      // 1: sandboxes and their lifecycle events.
      R"sql(
CREATE TABLE sandboxes (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  spec TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('creating', 'running', 'stopped')),
  pid INTEGER NOT NULL DEFAULT 0,
  start_time INTEGER NOT NULL DEFAULT 0,
  lease_index INTEGER NOT NULL DEFAULT -1,
  uid_base INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  last_active_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX sandboxes_name ON sandboxes(name) WHERE name != '';
CREATE TABLE sandbox_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  time INTEGER NOT NULL,
  sandbox TEXT NOT NULL,
  event TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT ''
)
)sql",
  };
  return m;
}

}  // namespace isb::store
