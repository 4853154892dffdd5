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
      // 2: identity: users, orgs (with the undeletable `default`), memberships, bearer credentials (only their
      // SHA-256), sessions, invitations and the one-time setup token.
      R"sql(
CREATE TABLE users (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  password_hash TEXT NOT NULL DEFAULT '',
  platform_admin INTEGER NOT NULL DEFAULT 0 CHECK (platform_admin IN (0, 1)),
  created_at INTEGER NOT NULL,
  disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1))
);
CREATE TABLE orgs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL
);
INSERT INTO orgs(name, created_at) VALUES ('default', CAST(strftime('%s', 'now') AS INTEGER));
CREATE TRIGGER orgs_default_kept BEFORE DELETE ON orgs WHEN OLD.name = 'default'
BEGIN SELECT RAISE(ABORT, 'org default cannot be deleted'); END;
CREATE TRIGGER orgs_default_named BEFORE UPDATE OF name ON orgs WHEN OLD.name = 'default'
BEGIN SELECT RAISE(ABORT, 'org default cannot be renamed'); END;
CREATE TABLE memberships (
  org_id INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role TEXT NOT NULL CHECK (role IN ('viewer', 'member', 'admin', 'owner')),
  PRIMARY KEY (org_id, user_id)
);
CREATE INDEX memberships_user ON memberships(user_id);
CREATE TABLE tokens (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  hash TEXT NOT NULL UNIQUE CHECK (length(hash) = 64),
  kind TEXT NOT NULL CHECK (kind IN ('token', 'superadmin')),
  name TEXT NOT NULL,
  org_id INTEGER REFERENCES orgs(id) ON DELETE CASCADE,
  user_id INTEGER REFERENCES users(id) ON DELETE CASCADE,
  role_cap TEXT CHECK (role_cap IN ('viewer', 'member', 'admin', 'owner')),
  scopes TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL,
  expires_at INTEGER,
  revoked_at INTEGER,
  last_used_at INTEGER,
  CHECK ((kind = 'superadmin') = (user_id IS NULL))
);
CREATE INDEX tokens_user ON tokens(user_id);
CREATE TABLE sessions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  hash TEXT NOT NULL UNIQUE CHECK (length(hash) = 64),
  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  ip TEXT NOT NULL DEFAULT '',
  user_agent TEXT NOT NULL DEFAULT '',
  revoked_at INTEGER
);
CREATE INDEX sessions_user ON sessions(user_id);
CREATE TABLE invitations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  hash TEXT NOT NULL UNIQUE CHECK (length(hash) = 64),
  org_id INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  role TEXT NOT NULL CHECK (role IN ('viewer', 'member', 'admin', 'owner')),
  created_by INTEGER REFERENCES users(id) ON DELETE SET NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at INTEGER
);
CREATE TABLE setup_token (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  hash TEXT NOT NULL CHECK (length(hash) = 64),
  created_at INTEGER NOT NULL,
  used_at INTEGER
)
)sql",
  };
  return m;
}

}  // namespace isb::store
