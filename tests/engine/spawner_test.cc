// The sandbox config as the spawner carries it to its process: JSON both ways.
#include "engine/spawner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace isb::engine {
namespace {

TEST(SpawnerConfigJson, AnImagesLayersGoBothWaysInTheirOrder) {
  SandboxConfig c;
  c.image_layers = {"/var/lib/isb/images/layers/sha256/aa/root", "/var/lib/isb/images/layers/sha256/bb/root"};
  c.idmap_image = true;
  auto back = ConfigFromJson(ConfigToJson(c));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->image_layers, c.image_layers);
  EXPECT_TRUE(back->idmap_image);
  EXPECT_EQ(back->image, "");
}

// A config written before layers existed (a spawner of an older isb, say) reads as no layers.
TEST(SpawnerConfigJson, AConfigWithoutLayersReadsAsNone) {
  SandboxConfig c;
  c.image = "/srv/rootfs";
  std::string json = ConfigToJson(c);
  const std::string field = "\"image_layers\":[],";
  const size_t at = json.find(field);
  ASSERT_NE(at, std::string::npos) << json;
  json.erase(at, field.size());
  auto back = ConfigFromJson(json);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->image_layers, std::vector<std::string>{});
  EXPECT_EQ(back->image, "/srv/rootfs");
}

}  // namespace
}  // namespace isb::engine
