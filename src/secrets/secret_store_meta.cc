// meta.json: the metadata of one secret, as JSON.
#include "secrets/secret_store_meta.h"

#include <nlohmann/json.hpp>

namespace isb::secrets {

std::string FormatSecretMeta(const SecretMeta& meta) {
  nlohmann::json j = {{"org", meta.org},
                      {"name", meta.name},
                      {"version", meta.version},
                      {"created_ms", meta.created_ms},
                      {"updated_ms", meta.updated_ms},
                      {"labels", meta.labels},
                      {"hosts", meta.hosts},
                      {"substitute", meta.substitute},
                      {"headers", meta.headers}};
  return j.dump(2) + "\n";
}

Result<SecretMeta> ParseSecretMeta(std::string_view text) {
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    SecretMeta meta;
    meta.org = j.at("org").get<std::string>();
    meta.name = j.at("name").get<std::string>();
    meta.version = j.at("version").get<int>();
    meta.created_ms = j.at("created_ms").get<int64_t>();
    meta.updated_ms = j.at("updated_ms").get<int64_t>();
    meta.labels = j.at("labels").get<std::map<std::string, std::string>>();
    meta.hosts = j.at("hosts").get<std::vector<std::string>>();
    // Written before substitution was per secret: headers only, the default.
    if (j.contains("substitute")) meta.substitute = j.at("substitute").get<std::vector<std::string>>();
    // Written before a secret could add header names: the credential headers only.
    if (j.contains("headers")) meta.headers = j.at("headers").get<std::vector<std::string>>();
    if (meta.version < 1) return Error::Msg("meta.json: version is below 1");
    return meta;
  } catch (const nlohmann::json::exception& e) {
    return Error::Msg(std::string("meta.json: ") + e.what());
  }
}

}  // namespace isb::secrets
