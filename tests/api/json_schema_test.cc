// The schema subset: each keyword, the path in messages, and hostile input that must not crash.
#include "api/json_schema.h"

#include <gtest/gtest.h>

#include "api/json_util.h"

namespace isb::api {
namespace {

std::string Fails(const json& schema, const json& value) {
  Status s = Validate(schema, value);
  if (s.ok()) return "ok";
  EXPECT_EQ(s.error().code, Code::kInvalidArgument);
  return s.error().message;
}

const json kSchema = json::parse(R"({
  "type": "object", "additionalProperties": false, "required": ["argv"],
  "properties": {
    "argv": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "string"}},
    "cpus": {"type": "number", "minimum": 0.001, "maximum": 64},
    "pids": {"type": "integer", "minimum": 1},
    "mem": {"type": ["integer", "string"]},
    "mode": {"type": "string", "enum": ["utf-8", "base64"]},
    "name": {"type": "string", "minLength": 1, "maxLength": 3},
    "env": {"type": "object", "maxProperties": 2, "additionalProperties": {"type": "string"}},
    "spec": {"type": "object", "additionalProperties": false, "properties": {"a": {"type": "boolean"}}}
  }})");

TEST(JsonSchemaTest, AcceptsValidInput) {
  EXPECT_EQ(Fails(kSchema, json::parse(R"({"argv":["a"],"cpus":0.5,"pids":3,"mem":"1G","mode":"utf-8",
      "name":"abc","env":{"A":"1"},"spec":{"a":true}})")),
            "ok");
  EXPECT_EQ(Fails(kSchema, json::parse(R"({"argv":["a"],"pids":3.0,"mem":5})")), "ok");  // 3.0 is an integer
}

TEST(JsonSchemaTest, NamesTheField) {
  EXPECT_EQ(Fails(kSchema, json::parse(R"({"argv":"ls"})")), "argv: expected array, got string");
  EXPECT_EQ(Fails(kSchema, json::parse(R"({"argv":["a", 1]})")), "argv[1]: expected string, got integer");
  EXPECT_EQ(Fails(kSchema, json::parse(R"({"argv":["a"],"cpus":0})")), "cpus: must be >= 0.001");
  EXPECT_EQ(Fails(kSchema, json::parse(R"({"argv":["a"],"cpus":65})")), "cpus: must be <= 64");
  EXPECT_EQ(Fails(kSchema, json::parse(R"({"argv":["a"],"foo":1})")), "unknown field 'foo'");
  EXPECT_EQ(Fails(kSchema, json::parse(R"({"argv":["a"],"spec":{"b":1}})")), "spec: unknown field 'b'");
  EXPECT_EQ(Fails(kSchema, json::parse(R"({})")), "missing required field 'argv'");
  EXPECT_EQ(Fails(kSchema, json::parse(R"({"argv":["a"],"pids":1.5})")), "pids: expected integer, got number");
  EXPECT_EQ(Fails(kSchema, json::parse(R"({"argv":["a"],"mem":true})")),
            "mem: expected integer or string, got boolean");
  EXPECT_EQ(Fails(kSchema, json::parse(R"({"argv":["a"],"mode":"x"})")), R"(mode: must be one of ["utf-8","base64"])");
  EXPECT_EQ(Fails(kSchema, json::parse(R"({"argv":[]})")), "argv: must have at least 1 items");
  EXPECT_EQ(Fails(kSchema, json::parse(R"({"argv":["a","b","c","d"]})")), "argv: must have at most 3 items, got 4");
  EXPECT_EQ(Fails(kSchema, json::parse(R"({"argv":["a"],"name":""})")), "name: must be at least 1 characters long");
  EXPECT_EQ(Fails(kSchema, json::parse(R"({"argv":["a"],"name":"abcd"})")),
            "name: must be at most 3 characters long, got 4");
  EXPECT_EQ(Fails(kSchema, json::parse(R"({"argv":["a"],"env":{"A":1}})")), "env.A: expected string, got integer");
  EXPECT_EQ(Fails(kSchema, json::parse(R"({"argv":["a"],"env":{"A":"","B":"","C":""}})")),
            "env: must have at most 2 entries, got 3");
}

TEST(JsonSchemaTest, LimitsBuiltFromSignedIntegers) {
  // Schemas written in C++ store 1 as a signed integer; the keyword must still apply.
  json schema = {{"type", "array"}, {"minItems", 1}, {"maxItems", int64_t{2}}};
  EXPECT_EQ(Fails(schema, json::array()), "must have at least 1 items");
  EXPECT_EQ(Fails(schema, json::array({1, 2, 3})), "must have at most 2 items, got 3");
  EXPECT_EQ(Fails({{"type", "string"}, {"maxLength", -1}}, "abc"), "ok");  // malformed keyword: ignored
}

TEST(JsonSchemaTest, AnIntegerIsOneAHandlerCanReadAsInt64) {
  // With "maximum" INT64_MAX (a double of 2^63), 2^63 in any spelling would pass a comparison of doubles and then
  // wrap when read as int64_t.
  json schema = {{"type", "object"},
                 {"properties", {{"id", {{"type", "integer"}, {"minimum", 1}, {"maximum", INT64_MAX}}}}}};
  EXPECT_EQ(Fails(schema, json::parse(R"({"id":9223372036854775807})")), "ok");
  EXPECT_EQ(Fails(schema, json::parse(R"({"id":9223372036854775807.0})")),
            "id: must be an integer between -9223372036854775808 and 9223372036854775807");
  EXPECT_EQ(Fails(schema, json::parse(R"({"id":9223372036854775808})")),
            "id: must be an integer between -9223372036854775808 and 9223372036854775807");
  EXPECT_EQ(Fails(schema, json::parse(R"({"id":1e300})")),
            "id: must be an integer between -9223372036854775808 and 9223372036854775807");
  EXPECT_EQ(Fails({{"type", "integer"}}, json::parse("-9223372036854775808.0")), "ok");
  EXPECT_EQ(Fails({{"type", "integer"}}, json::parse("-9223372036854777856.0")),
            "must be an integer between -9223372036854775808 and 9223372036854775807");
  EXPECT_EQ(Fails({{"type", "integer"}}, json::parse("1.5")), "expected integer, got number");
}

TEST(JsonSchemaTest, LengthCountsCodePoints) {
  EXPECT_EQ(Fails(kSchema, json::parse("{\"argv\":[\"a\"],\"name\":\"\xC3\xA9\xC3\xA9\xC3\xA9\"}")), "ok");
}

TEST(JsonSchemaTest, HostileInputNeverCrashes) {
  // Deep values beside a shallow schema are not walked; a deep schema stops at the limit.
  // (Copying a deep json recurses, so it is built in place; ParseJson never lets input this deep through.)
  json input = json::object();
  json* at = &input["argv"];
  for (int i = 0; i < 10000; ++i) at = &(*at = json::array({nullptr}))[0];
  EXPECT_EQ(Fails(kSchema, input), "argv[0]: expected string, got array");
  json schema = {{"type", "array"}};
  for (int i = 0; i < 100; ++i) schema = {{"type", "array"}, {"items", schema}};
  json value = json::array();
  for (int i = 0; i < 100; ++i) value = json::array({value});
  EXPECT_NE(Fails(schema, value).find("nested too deeply"), std::string::npos);
  // Odd schemas are ignored, not trusted.
  EXPECT_EQ(Fails(json::parse(R"({"type": 5, "minimum": "x", "required": "a", "items": 3})"), json::array({1})), "ok");
  EXPECT_EQ(Fails(json(false), 1), "not allowed");
  EXPECT_EQ(Fails(kSchema, json::parse(R"({"argv":["a"],"cpus":1e308})")), "cpus: must be <= 64");
}

}  // namespace
}  // namespace isb::api
