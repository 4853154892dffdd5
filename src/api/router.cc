// Route matching: the order of a table, its checks, and the WebSocket upgrade rule.
#include "api/router.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "egress/host_port.h"

namespace isb::api {
namespace {

constexpr std::string_view kWildcardHost = "*.";

// The request's host name as route hosts are written: without port, brackets or trailing dot; nullopt when Host is
// absent or is not host[:port].
std::optional<std::string> RequestHost(std::string_view host_header) {
  std::optional<egress::HostPort> split = egress::SplitHostPort(host_header);
  if (!split || split->host.empty()) return std::nullopt;
  std::string_view host = split->host;
  if (host.ends_with('.')) host.remove_suffix(1);
  std::string lower(host);
  for (char& c : lower) c = AsciiLower(c);
  return lower;
}

bool HostMatches(const std::string& pattern, const std::optional<std::string>& host) {
  if (pattern.empty()) return true;
  if (!host) return false;
  if (!pattern.starts_with(kWildcardHost)) return *host == pattern;
  std::string_view suffix = std::string_view(pattern).substr(1);  // ".name"
  return host->size() > suffix.size() && host->ends_with(suffix);
}

// Splits off the segment after the leading '/' of `path` (which it then no longer holds).
std::string_view NextSegment(std::string_view& path) {
  path.remove_prefix(1);
  size_t slash = path.find('/');
  std::string_view segment = path.substr(0, slash);
  path = slash == std::string_view::npos ? std::string_view() : path.substr(slash);
  return segment;
}

bool SegmentsMatch(std::string_view pattern, std::string_view path) {
  while (!pattern.empty() && !path.empty()) {
    std::string_view want = NextSegment(pattern);
    std::string_view got = NextSegment(path);
    if (want == "*" ? got.empty() : want != got) return false;
  }
  return pattern.empty() && path.empty();
}

bool PathMatches(const RouteMatch& match, std::string_view path) {
  switch (match.kind) {
    case RouteMatch::Kind::kExact:
      return path == match.path;
    case RouteMatch::Kind::kSegments:
      return path.starts_with('/') && SegmentsMatch(match.path, path);
    case RouteMatch::Kind::kPrefix:
      return path.starts_with(match.path);
    case RouteMatch::Kind::kAny:
      return true;
  }
  return false;
}

// The rank Router sorts by, smallest first (see router.h).
std::tuple<int, int, int, int> Rank(const RouteMatch& match) {
  const int host = match.host.empty() ? 2 : match.host.starts_with(kWildcardHost) ? 1 : 0;
  const int host_length = -static_cast<int>(match.host.size());
  int literal = 0;
  if (match.kind == RouteMatch::Kind::kSegments) {
    literal = static_cast<int>(match.path.size() - std::count(match.path.begin(), match.path.end(), '*'));
  } else if (match.kind == RouteMatch::Kind::kPrefix) {
    literal = static_cast<int>(match.path.size());
  }
  return {host, host_length, static_cast<int>(match.kind), -literal};
}

Error BadRoute(const RouteMatch& match, const std::string& why) {
  return Error::Of(Code::kInvalidArgument, "route " + Describe(match) + ": " + why);
}

// The route's host pattern in the form requests are compared with, or why it is not one.
Status NormalizeRouteHost(RouteMatch& match) {
  if (match.host.empty()) return {};
  const bool wildcard = match.host.starts_with(kWildcardHost);
  Result<std::string> name = egress::NormalizeHostName(std::string_view(match.host).substr(wildcard ? 2 : 0));
  if (!name.ok()) {
    return BadRoute(match, "host pattern " + name.error().message + "; write a host name or *. and a host name");
  }
  match.host = (wildcard ? std::string(kWildcardHost) : std::string()) + *name;
  return {};
}

Status CheckPath(const RouteMatch& match) {
  if (match.kind == RouteMatch::Kind::kAny) {
    return match.path.empty() ? Status() : BadRoute(match, "a route for any path has no path");
  }
  if (!match.path.starts_with('/')) return BadRoute(match, "the path must start with \"/\"");
  if (match.kind != RouteMatch::Kind::kSegments) return {};
  for (std::string_view rest = match.path; !rest.empty();) {
    std::string_view segment = NextSegment(rest);
    if (segment.empty()) return BadRoute(match, "a segment pattern has no empty segment; remove the extra \"/\"");
    if (segment != "*" && segment.find('*') != std::string_view::npos) {
      return BadRoute(match, "\"*\" stands for a whole segment, not part of one");
    }
  }
  return {};
}

bool SameMatch(const RouteMatch& a, const RouteMatch& b) {
  return a.kind == b.kind && a.path == b.path && a.host == b.host;
}

}  // namespace

std::string_view HandlerName(Handler handler) {
  switch (handler) {
    case Handler::kHealth:
      return "health";
    case Handler::kSignIn:
      return "sign_in";
    case Handler::kRest:
      return "rest";
    case Handler::kMcp:
      return "mcp";
    case Handler::kWebUi:
      return "web_ui";
    case Handler::kTerminal:
      return "terminal";
    case Handler::kEvents:
      return "events";
    case Handler::kMetrics:
      return "metrics";
    case Handler::kOAuth:
      return "oauth";
    case Handler::kNoRoute:
      return "no_route";
  }
  return "unknown";
}

std::string_view SurfaceOf(Handler handler) { return handler == Handler::kMcp ? "mcp" : "rest"; }

std::string Describe(const RouteMatch& match) {
  std::string text;
  switch (match.kind) {
    case RouteMatch::Kind::kExact:
      text = "exact " + match.path;
      break;
    case RouteMatch::Kind::kSegments:
      text = "segments " + match.path;
      break;
    case RouteMatch::Kind::kPrefix:
      text = "prefix " + match.path;
      break;
    case RouteMatch::Kind::kAny:
      text = "any";
      break;
  }
  if (!match.host.empty()) text += " on host " + match.host;
  return text;
}

Result<Router> Router::Make(std::vector<Route> routes) {
  bool fallback = false;
  for (size_t i = 0; i < routes.size(); ++i) {
    ISB_TRY(CheckPath(routes[i].match));
    ISB_TRY(NormalizeRouteHost(routes[i].match));
    for (size_t j = 0; j < i; ++j) {
      if (SameMatch(routes[i].match, routes[j].match)) {
        return BadRoute(routes[i].match, "two routes take the same requests; remove one");
      }
    }
    fallback = fallback || (routes[i].match.kind == RouteMatch::Kind::kAny && routes[i].match.host.empty());
  }
  if (!fallback) {
    return Error::Of(Code::kInvalidArgument,
                     "the route table has no route for any path (RouteMatch::Any()); add "
                     "one for the paths no other route takes");
  }
  std::stable_sort(routes.begin(), routes.end(),
                   [](const Route& a, const Route& b) { return Rank(a.match) < Rank(b.match); });
  return Router(std::move(routes));
}

const Route& Router::Find(std::string_view host, std::string_view path) const {
  const std::optional<std::string> name = RequestHost(host);
  for (const Route& route : routes_) {
    if (HostMatches(route.match.host, name) && PathMatches(route.match, path)) return route;
  }
  return routes_.back();  // unreached: Make required a route for any path, which sorts last
}

bool AsksForWebSocket(const Headers& headers) {
  for (const auto& [name, value] : headers.fields()) {
    if (!EqualsIgnoreCase(name, "Upgrade")) continue;
    std::string_view list = value;
    while (!list.empty()) {
      size_t comma = list.find(',');
      std::string_view token = list.substr(0, comma);
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
      while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.remove_prefix(1);
      while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
      // A protocol may name its version ("websocket/13"); the name is what counts.
      if (EqualsIgnoreCase(token.substr(0, token.find('/')), "websocket")) return true;
    }
  }
  return false;
}

Status CheckUpgrade(const Route& route, const Request& req) {
  if (route.websocket || !AsksForWebSocket(req.headers)) return {};
  return Error::Of(Code::kInvalidArgument,
                   "no WebSocket is served at this path; send it as a plain HTTP request, "
                   "without \"Upgrade: websocket\"");
}

}  // namespace isb::api
