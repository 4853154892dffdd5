// The one-time setup token (isb_setup_): whoever reads <state>/setup-token on the host creates the first admin.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "base/result.h"
#include "identity/clock.h"
#include "identity/users.h"
#include "store/db.h"

namespace isb::identity {

inline constexpr std::string_view kSetupTokenFile = "setup-token";

// Thread-safe.
class Setup {
 public:
  Setup(store::Db& db, Clock now, Users& users, std::string state_dir)
      : db_(db), now_(std::move(now)), users_(users), state_dir_(std::move(state_dir)) {}

  // At start-up. While no enabled platform admin exists: mints a fresh setup token (the previous one stops working),
  // writes it to <state_dir>/setup-token with mode 0600 and returns that path. Once one exists: removes the file and
  // returns "".
  Result<std::string> Prepare();
  // Creates the first platform admin, owner of `default`, and uses the token up. kUnauthenticated "malformed token",
  // "unknown token" or "token used"; kConflict when a platform admin exists already.
  Result<int64_t> CreateFirstAdmin(std::string_view secret, std::string_view name, std::string_view password);
  // The host's way (isb setup): creates the first platform admin (`password` may be empty) and uses the token up.
  // kConflict when an enabled platform admin exists already. The check and the creation are one step against this
  // and CreateFirstAdmin: of two setups at once, one makes an admin and the other is refused.
  Result<int64_t> CreateFirstAdminAsHost(std::string_view name, std::string_view password);
  // Any other platform admin (user_create platform_admin): created and the token used up under the same lock as the
  // first admin's, so a setup racing it cannot make a second "first" admin in between.
  Result<int64_t> CreatePlatformAdmin(std::string_view name, std::string_view password);
  // A platform admin was made another way: the setup token stops working (its file goes), so that disabling every
  // admin later does not bring it back to life; only a restart with no admin mints a new one.
  Status UseUp();

  std::string path() const { return state_dir_ + "/" + std::string(kSetupTokenFile); }

 private:
  store::Db& db_;
  Clock now_;
  Users& users_;
  std::string state_dir_;
  Mutex first_admin_mu_;  // held from "is there an admin?" until the first one exists
};

}  // namespace isb::identity
