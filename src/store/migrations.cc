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
      // 3: the audit log and the sandbox history: two append-only hash-chained tables and their anchors.
      // Triggers refuse UPDATE, refuse DELETE of rows after a chain's anchor, and refuse an INSERT that does not
      // extend its chain at the head. Retention pruning is one UPDATE that advances an anchor to an existing row's
      // hash; its AFTER trigger deletes the rows up to it in the same statement.
      R"sql(
CREATE TABLE chain_anchors (
  chain TEXT PRIMARY KEY,
  pruned_through INTEGER NOT NULL,
  hash TEXT NOT NULL
);
INSERT INTO chain_anchors(chain, pruned_through, hash) VALUES
  ('audit_log', 0, '0000000000000000000000000000000000000000000000000000000000000000'),
  ('sandbox_history', 0, '0000000000000000000000000000000000000000000000000000000000000000');
CREATE TABLE audit_log (
  id INTEGER PRIMARY KEY,
  time INTEGER NOT NULL,
  org TEXT NOT NULL,
  actor TEXT NOT NULL,
  actor_kind TEXT NOT NULL,
  surface TEXT NOT NULL,
  action TEXT NOT NULL,
  target TEXT NOT NULL,
  details TEXT NOT NULL,
  outcome TEXT NOT NULL,
  ip TEXT NOT NULL,
  user_agent TEXT NOT NULL,
  request_id TEXT NOT NULL,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL
);
CREATE INDEX audit_log_org ON audit_log(org, id);
CREATE INDEX audit_log_time ON audit_log(time);
CREATE TABLE sandbox_history (
  id INTEGER PRIMARY KEY,
  time INTEGER NOT NULL,
  sandbox TEXT NOT NULL,
  org TEXT NOT NULL,
  event TEXT NOT NULL,
  actor TEXT NOT NULL,
  actor_kind TEXT NOT NULL,
  reason TEXT NOT NULL,
  request_id TEXT NOT NULL,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL
);
CREATE INDEX sandbox_history_sandbox ON sandbox_history(sandbox, id);
CREATE INDEX sandbox_history_org ON sandbox_history(org, id);
CREATE INDEX sandbox_history_time ON sandbox_history(time);

CREATE TRIGGER chain_anchors_no_insert BEFORE INSERT ON chain_anchors BEGIN
  SELECT RAISE(ABORT, 'chain_anchors: the set of chains is fixed');
END;
CREATE TRIGGER chain_anchors_no_delete BEFORE DELETE ON chain_anchors BEGIN
  SELECT RAISE(ABORT, 'chain_anchors: the set of chains is fixed');
END;
CREATE TRIGGER chain_anchors_advance BEFORE UPDATE ON chain_anchors
WHEN NEW.chain IS NOT OLD.chain OR NEW.pruned_through <= OLD.pruned_through
  OR NEW.hash IS NOT (CASE NEW.chain
    WHEN 'audit_log' THEN (SELECT hash FROM audit_log WHERE id = NEW.pruned_through)
    WHEN 'sandbox_history' THEN (SELECT hash FROM sandbox_history WHERE id = NEW.pruned_through) END)
BEGIN
  SELECT RAISE(ABORT, 'chain_anchors: an anchor only advances, to the hash of a row of its chain');
END;
CREATE TRIGGER chain_anchors_prune AFTER UPDATE ON chain_anchors BEGIN
  DELETE FROM audit_log WHERE NEW.chain = 'audit_log' AND id <= NEW.pruned_through;
  DELETE FROM sandbox_history WHERE NEW.chain = 'sandbox_history' AND id <= NEW.pruned_through;
END;

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log BEGIN
  SELECT RAISE(ABORT, 'audit_log is append-only: rows cannot be changed');
END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
WHEN OLD.id > (SELECT pruned_through FROM chain_anchors WHERE chain = 'audit_log') BEGIN
  SELECT RAISE(ABORT, 'audit_log is append-only: rows are deleted only by retention pruning');
END;
CREATE TRIGGER audit_log_append BEFORE INSERT ON audit_log
WHEN NEW.id IS NOT coalesce((SELECT max(id) FROM audit_log),
                            (SELECT pruned_through FROM chain_anchors WHERE chain = 'audit_log')) + 1
  OR NEW.prev_hash IS NOT coalesce((SELECT hash FROM audit_log ORDER BY id DESC LIMIT 1),
                                   (SELECT hash FROM chain_anchors WHERE chain = 'audit_log'))
BEGIN
  SELECT RAISE(ABORT, 'audit_log is append-only: a row must extend the chain at its head');
END;

CREATE TRIGGER sandbox_history_no_update BEFORE UPDATE ON sandbox_history BEGIN
  SELECT RAISE(ABORT, 'sandbox_history is append-only: rows cannot be changed');
END;
CREATE TRIGGER sandbox_history_no_delete BEFORE DELETE ON sandbox_history
WHEN OLD.id > (SELECT pruned_through FROM chain_anchors WHERE chain = 'sandbox_history') BEGIN
  SELECT RAISE(ABORT, 'sandbox_history is append-only: rows are deleted only by retention pruning');
END;
CREATE TRIGGER sandbox_history_append BEFORE INSERT ON sandbox_history
WHEN NEW.id IS NOT coalesce((SELECT max(id) FROM sandbox_history),
                            (SELECT pruned_through FROM chain_anchors WHERE chain = 'sandbox_history')) + 1
  OR NEW.prev_hash IS NOT coalesce((SELECT hash FROM sandbox_history ORDER BY id DESC LIMIT 1),
                                   (SELECT hash FROM chain_anchors WHERE chain = 'sandbox_history'))
BEGIN
  SELECT RAISE(ABORT, 'sandbox_history is append-only: a row must extend the chain at its head');
END
)sql",
      // 4: per-org quotas, budgets of what the org's sandboxes are allocated; NULL is no limit.
      R"sql(
CREATE TABLE org_quotas (
  org_id INTEGER PRIMARY KEY REFERENCES orgs(id) ON DELETE CASCADE,
  cpus REAL CHECK (cpus IS NULL OR cpus > 0),
  memory INTEGER CHECK (memory IS NULL OR memory > 0),
  instances INTEGER CHECK (instances IS NULL OR instances >= 0)
);
)sql",
      // 5: sandbox names are unique per org, not across orgs. The org is the isb.org label of the spec; sandboxes
      // from before orgs have none and belong to `default`.
      R"sql(
ALTER TABLE sandboxes ADD COLUMN org TEXT NOT NULL DEFAULT 'default';
UPDATE sandboxes SET org = coalesce(json_extract(spec, '$.labels."isb.org"'), 'default');
DROP INDEX sandboxes_name;
CREATE UNIQUE INDEX sandboxes_org_name ON sandboxes(org, name) WHERE name != '';
)sql",
      // 6: the org quota's disk, bytes of writable layers (each sandbox's spec.disk); NULL is no limit.
      R"sql(
ALTER TABLE org_quotas ADD COLUMN disk INTEGER CHECK (disk IS NULL OR disk > 0);
)sql",
      // 7: an org's display name and description (org_update; its name is its identifier and stays), and revoked
      // invitations.
      R"sql(
ALTER TABLE orgs ADD COLUMN display_name TEXT NOT NULL DEFAULT '';
ALTER TABLE orgs ADD COLUMN description TEXT NOT NULL DEFAULT '';
ALTER TABLE invitations ADD COLUMN revoked_at INTEGER;
)sql",
      // 8: the org quota's pids, processes and threads (each sandbox's spec.pids); NULL is no limit.
      R"sql(
ALTER TABLE org_quotas ADD COLUMN pids INTEGER CHECK (pids IS NULL OR pids > 0);
)sql",
      // 9: what a runtime needs to find a running sandbox again: its name and its record there (engine/runtime.h).
      // The rows of running sandboxes from before are the namespaces runtime's; pid, start_time and lease_index stay
      // as what the host shows of them.
      R"sql(
ALTER TABLE sandboxes ADD COLUMN runtime TEXT NOT NULL DEFAULT '';
ALTER TABLE sandboxes ADD COLUMN handle TEXT NOT NULL DEFAULT '';
UPDATE sandboxes SET runtime = 'namespaces',
  handle = 'pid=' || pid || ' start=' || start_time || ' lease=' || lease_index WHERE state = 'running' AND pid > 0;
)sql",
      // 10: OAuth 2.1 for MCP clients (api/oauth_server.h): the audience an access token is bound to (RFC 8707;
      // NULL: any), registered clients, authorization codes and refresh tokens (only their SHA-256). A refresh
      // token's family is the code it came from: reusing a rotated one revokes the family and its access tokens.
      R"sql(
ALTER TABLE tokens ADD COLUMN resource TEXT;
CREATE TABLE oauth_clients (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  redirect_uris TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE TABLE oauth_codes (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  hash TEXT NOT NULL UNIQUE CHECK (length(hash) = 64),
  client_id TEXT NOT NULL REFERENCES oauth_clients(id) ON DELETE CASCADE,
  redirect_uri TEXT NOT NULL,
  challenge TEXT NOT NULL,
  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  org_id INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  role TEXT NOT NULL CHECK (role IN ('viewer', 'member', 'admin', 'owner')),
  resource TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at INTEGER
);
CREATE TABLE oauth_refresh (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  hash TEXT NOT NULL UNIQUE CHECK (length(hash) = 64),
  family INTEGER NOT NULL REFERENCES oauth_codes(id) ON DELETE CASCADE,
  access_token_id INTEGER NOT NULL REFERENCES tokens(id) ON DELETE CASCADE,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at INTEGER,
  revoked_at INTEGER
);
CREATE INDEX oauth_refresh_family ON oauth_refresh(family);
)sql",
      // 11: when an OAuth client was last given a code, so that clients registered and never used (or unused for
      // the life of a grant) are swept, and indexes for the sweep and for ending a user's grants.
      R"sql(
ALTER TABLE oauth_clients ADD COLUMN last_used_at INTEGER;
CREATE INDEX oauth_codes_client ON oauth_codes(client_id);
CREATE INDEX oauth_codes_user ON oauth_codes(user_id);
CREATE INDEX oauth_codes_expiry ON oauth_codes(expires_at);
CREATE INDEX oauth_refresh_expiry ON oauth_refresh(expires_at);
)sql",
      // 12: a client known by the URL of its metadata document (a Client ID Metadata Document) is a row like a
      // registered one, with the time its fetched copy goes stale.
      R"sql(
ALTER TABLE oauth_clients ADD COLUMN document_expires_at INTEGER;
)sql",
  };
  return m;
}

}  // namespace isb::store
