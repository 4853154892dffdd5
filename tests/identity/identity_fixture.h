// A fresh identity store in a temp dir, with a clock the test moves, and helpers for users, orgs and principals.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "identity/store.h"
#include "store/migrations.h"

namespace isb::identity {

// Passwords of the policy's minimum length and more; never secrets of any real account.
inline constexpr char kPassword[] = "correct horse battery";
inline constexpr char kOtherPassword[] = "wrong horse battery!";

class IdentityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/isb-identity-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto db = store::Db::Open(db_path(), store::Migrations());
    ASSERT_TRUE(db.ok()) << db.error().message;
    db_ = std::move(*db);
    auto id = IdentityStore::Open(*db_, {[this] { return now_; }, dir_});
    ASSERT_TRUE(id.ok()) << id.error().message;
    id_ = std::move(*id);
  }
  void TearDown() override {
    id_.reset();
    db_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string db_path() const { return dir_ + "/isb.db"; }

  // A user without a password (no argon2id work), a member of `org` with `role` when org is not empty.
  int64_t NewUser(const std::string& name, const std::string& org = "", Role role = Role::kMember) {
    auto id = id_->users().Create(name, "");
    EXPECT_TRUE(id.ok()) << id.error().message;
    if (!org.empty()) {
      auto st = id_->orgs().AddMember(Principal::Host(), org, *id, role);
      EXPECT_TRUE(st.ok()) << st.error().message;
    }
    return id.ok() ? *id : 0;
  }
  void NewOrg(const std::string& name) {
    auto id = id_->orgs().Create(Principal::Host(), name);
    ASSERT_TRUE(id.ok()) << id.error().message;
  }
  // The principal a password sign-in of `user` would give.
  Principal As(int64_t user) {
    auto p = id_->users().PrincipalOf(user, PrincipalKind::kUser, "disabled");
    EXPECT_TRUE(p.ok()) << p.error().message;
    return p.ok() ? *p : Principal{};
  }

  int64_t now_ = 1'700'000'000;
  std::string dir_;
  std::unique_ptr<store::Db> db_;
  std::unique_ptr<IdentityStore> id_;
};

// Asserts a failed Result or Status with exactly `code` and `message`.
#define EXPECT_ERROR(expr, code_, message_)                    \
  do {                                                         \
    auto&& r_ = (expr);                                        \
    ASSERT_FALSE(r_.ok()) << "expected: " << (message_);       \
    EXPECT_EQ(r_.error().code, (code_)) << r_.error().message; \
    EXPECT_EQ(r_.error().message, (message_));                 \
  } while (0)

}  // namespace isb::identity
