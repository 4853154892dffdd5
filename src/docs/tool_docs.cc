// The tools reference, rendered from the registry so that it says what the daemon serves and nothing else.
#include "docs/tool_docs.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "api/mcp.h"
#include "docs/markdown.h"
#include "identity/roles.h"

namespace isb::docs {
namespace {

using json = nlohmann::json;

std::string Code(std::string_view text) { return "`" + std::string(text) + "`"; }

std::string Number(const json& v) { return v.is_number() ? v.dump() : ""; }

std::string Items(const json& n) { return Number(n) + (n == 1 ? " item" : " items"); }

std::string TypeOf(const json& schema);

std::string EnumOf(const json& values) {
  std::string out;
  for (const json& v : values) out += (out.empty() ? "" : " | ") + Code(v.dump());  // Cell escapes the |
  return out;
}

std::string TypeOf(const json& schema) {
  if (!schema.is_object()) return "any";
  if (auto e = schema.find("enum"); e != schema.end() && e->is_array()) return EnumOf(*e);
  for (const char* key : {"oneOf", "anyOf"}) {
    if (auto alts = schema.find(key); alts != schema.end() && alts->is_array()) {
      std::string out;
      for (const json& alt : *alts) out += (out.empty() ? "" : " or ") + TypeOf(alt);
      return out;
    }
  }
  auto type = schema.find("type");
  if (type == schema.end()) return "any";
  std::vector<std::string> names;
  if (type->is_string()) names.push_back(type->get<std::string>());
  if (type->is_array())
    for (const json& t : *type)
      if (t.is_string()) names.push_back(t.get<std::string>());
  std::string out;
  for (const std::string& name : names) {
    std::string one = name;
    if (name == "array") {
      auto items = schema.find("items");
      if (items != schema.end()) one = "array of " + TypeOf(*items);
    }
    out += (out.empty() ? "" : " or ") + one;
  }
  return out;
}

// What the schema bounds: lengths, ranges, counts, patterns, and the default.
std::string LimitsOf(const json& schema) {
  if (!schema.is_object()) return "";
  std::vector<std::string> parts;
  auto has = [&](const char* key) { return schema.contains(key) && schema[key].is_number(); };
  if (has("minLength") && has("maxLength")) {
    parts.push_back(Number(schema["minLength"]) + " to " + Number(schema["maxLength"]) + " characters");
  } else if (has("maxLength")) {
    parts.push_back("at most " + Number(schema["maxLength"]) + " characters");
  } else if (has("minLength")) {
    parts.push_back("at least " + Number(schema["minLength"]) + " characters");
  }
  if (has("minimum") && has("maximum")) {
    parts.push_back(Number(schema["minimum"]) + " to " + Number(schema["maximum"]));
  } else if (has("maximum")) {
    parts.push_back("at most " + Number(schema["maximum"]));
  } else if (has("minimum")) {
    parts.push_back("at least " + Number(schema["minimum"]));
  }
  if (has("minItems")) parts.push_back("at least " + Items(schema["minItems"]));
  if (has("maxItems")) parts.push_back("at most " + Items(schema["maxItems"]));
  if (has("maxProperties")) parts.push_back("at most " + Number(schema["maxProperties"]) + " entries");
  if (auto p = schema.find("pattern"); p != schema.end() && p->is_string()) {
    parts.push_back("matches " + Code(p->get<std::string>()));
  }
  if (auto items = schema.find("items");
      items != schema.end() && items->is_object() && !items->contains("properties")) {
    if (std::string inner = LimitsOf(*items); !inner.empty()) parts.push_back("each item " + inner);
  }
  if (auto add = schema.find("additionalProperties"); add != schema.end() && add->is_object()) {
    if (std::string inner = LimitsOf(*add); !inner.empty()) parts.push_back("each value " + inner);
  }
  if (auto d = schema.find("default"); d != schema.end()) parts.push_back("default " + Code(d->dump()));
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

void Rows(const json& object_schema, const std::string& prefix, std::string& out) {
  auto props = object_schema.find("properties");
  if (props == object_schema.end() || !props->is_object()) return;
  std::vector<std::string> required;
  if (auto r = object_schema.find("required"); r != object_schema.end() && r->is_array())
    for (const json& name : *r)
      if (name.is_string()) required.push_back(name.get<std::string>());
  for (const auto& [name, schema] : props->items()) {
    const std::string path = prefix + name;
    const bool is_required = std::find(required.begin(), required.end(), name) != required.end();
    out += "| " + Code(path) + " | " + Cell(TypeOf(schema)) + " | " + (is_required ? "yes" : "") + " | " +
           Cell(schema.value("description", "")) + " | " + Cell(LimitsOf(schema)) + " |\n";
    if (!schema.is_object()) continue;
    Rows(schema, path + ".", out);
    if (auto items = schema.find("items"); items != schema.end() && items->is_object()) Rows(*items, path + "[].", out);
    for (const char* key : {"oneOf", "anyOf"})
      if (auto alts = schema.find(key); alts != schema.end() && alts->is_array())
        for (const json& alt : *alts)
          if (alt.is_object()) Rows(alt, path + ".", out);
  }
}

// The first sentence of a description, for the index.
std::string Summary(std::string_view description) {
  size_t end = description.find(". ");
  if (end == std::string_view::npos) return std::string(description);
  return std::string(description.substr(0, end + 1));
}

std::string ScopeWord(identity::ScopeKind kind) {
  switch (kind) {
    case identity::ScopeKind::kRead:
      return "read";
    case identity::ScopeKind::kDeploy:
      return "deploy";
    case identity::ScopeKind::kAdmin:
      return "admin";
    case identity::ScopeKind::kTool:
      return "tool";
    case identity::ScopeKind::kMetrics:
      return "metrics";
  }
  return "?";
}

std::string Anchor(std::string_view name) { return std::string(name); }  // tool names are [a-z_]+

void ToolSection(const api::Tool& tool, std::string& out) {
  out += "## " + tool.name + "\n\n";
  if (!tool.title.empty()) out += "**" + tool.title + ".** ";
  out += tool.description + "\n\n";
  out += "- Who may call it: " + WhoMayCall(tool) + "\n";
  const api::ToolAnnotations& a = tool.annotations;
  if (a.read_only) {
    out += "- Changes nothing (read-only).\n";
  } else {
    out += "- Changes something: every call is an audit row.";
    if (a.idempotent) out += " Idempotent: calling it again with the same input changes nothing more.";
    out += "\n";
  }
  if (!a.read_only && a.destructive) {
    // The daemon's default list: api::McpOptions, which `isb serve --mcp-pre-approve` replaces.
    const bool pre_approved = api::McpOptions{}.pre_approved.count(tool.name) > 0;
    out += pre_approved ? "- Destructive, yet pre-approved over MCP by default: no person is asked unless "
                          "`isb serve --mcp-pre-approve` leaves it out.\n"
                        : "- Destructive: over MCP a person approves each call, unless `isb serve --mcp-pre-approve` "
                          "names it.\n";
  }
  if (a.open_world) out += "- Reaches beyond isb (open world).\n";
  if (tool.streams) out += "- Streams its output: REST `?stream=1` (Server-Sent Events), MCP progress notifications.\n";
  out += "\n";
  if (tool.input_schema.contains("properties") && !tool.input_schema["properties"].empty()) {
    out += "Input:\n\n" + FieldsTable(tool.input_schema) + "\n";
  } else {
    out += "Input: none (`{}`).\n\n";
  }
  if (auto props = tool.output_schema.find("properties"); props != tool.output_schema.end() && !props->empty()) {
    std::string fields;
    for (const auto& [name, schema] : props->items()) fields += (fields.empty() ? "" : ", ") + Code(name);
    out += "Result: an object with " + fields + ".\n\n";
  }
}

}  // namespace

std::string FieldsTable(const json& object_schema) {
  std::string out = "| field | type | required | description | limits |\n|---|---|---|---|---|\n";
  Rows(object_schema, "", out);
  return out;
}

std::string WhoMayCall(const api::Tool& tool) {
  const api::ToolAccess access = tool.access.value_or(api::DefaultAccess(tool.annotations));
  identity::Role least = access.least_role;
  if (!tool.annotations.read_only) least = std::max(least, identity::Role::kMember);  // as Registry::Authorize
  std::string who;
  if (access.platform) {
    who = access.org_bound ? "platform admins, acting in the call's org" : "platform admins";
  } else if (access.org_bound) {
    who = std::string(identity::RoleName(least)) + " or above in the call's org";
  } else if (least == identity::Role::kViewer) {
    who = "any signed-in caller, about itself";
  } else {
    who = "any signed-in caller, about itself, unless its credential is capped at viewer";
  }
  who += "; a token needs scope `" + ScopeWord(access.kind) + "` (or `tool:" + tool.name + "`)";
  if (access.account_wide) who += "; never a token scoped to one org";
  if (access.audit_reads) who += "; every call, read or not, is an audit row";
  return who;
}

std::string ToolsMarkdown(const api::Registry& registry) {
  const std::vector<const api::Tool*> tools = registry.List();
  std::string out =
      "# Tools\n\n"
      "<!-- Generated by `make docs` (build/isb_docs) from the tool registry, src/api/*_tools.cc: do not edit. -->\n\n"
      "Every operation of `isb serve` is one of these tools, served alike on REST (`POST /api/v1/tools/<tool>` with "
      "the input as the body), MCP (`tools/call` at `/mcp` or `/orgs/<org>/mcp`), the unix socket and the CLI. "
      "Each call is judged before its handler runs: the tool must be open to the caller (`isb serve --allow-tools` / "
      "`--deny-tools`), the caller must reach the org and hold the role below there, a token's scopes must cover it, "
      "and the input must match the schema (unknown fields are refused). `GET /api/v1/tools` and "
      "`GET /api/v1/openapi.json` give the same schemas as JSON.\n\n"
      "| tool | who may call it | what it does |\n|---|---|---|\n";
  for (const api::Tool* tool : tools) {
    const api::ToolAccess access = tool->access.value_or(api::DefaultAccess(tool->annotations));
    identity::Role least = access.least_role;
    if (!tool->annotations.read_only) least = std::max(least, identity::Role::kMember);
    const std::string who = access.platform    ? "platform admin"
                            : access.org_bound ? std::string(identity::RoleName(least))
                                               : "any caller (about itself)";
    out += "| [" + tool->name + "](#" + Anchor(tool->name) + ") | " + who + " | " + Cell(Summary(tool->description)) +
           " |\n";
  }
  out += "\n";
  for (const api::Tool* tool : tools) ToolSection(*tool, out);
  EndPage(out);
  return out;
}

}  // namespace isb::docs
