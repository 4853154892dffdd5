// The client side of a tool call: where the daemon is, a call and a streamed call over REST, and how the daemon's
// answers become results, errors and exit codes.
#include <cstdio>
#include <optional>

#include "cli/sandbox_cmds_internal.h"

namespace isb::cli {

Error Usage(std::string message) { return Error::Of(Code::kInvalidArgument, std::move(message)); }

std::string Dump(const json& j, int indent) { return j.dump(indent, ' ', false, json::error_handler_t::replace); }

namespace {

Code CodeNamed(std::string_view name) {
  if (name == "invalid_argument" || name == "method_not_allowed") return Code::kInvalidArgument;
  if (name == "unauthenticated") return Code::kUnauthenticated;
  if (name == "forbidden") return Code::kForbidden;
  if (name == "not_found") return Code::kNotFound;
  if (name == "conflict") return Code::kConflict;
  if (name == "too_large") return Code::kTooLarge;
  if (name == "timeout") return Code::kTimeout;
  if (name == "unavailable") return Code::kUnavailable;
  if (name == "rate_limited") return Code::kTooManyRequests;
  return Code::kInternal;
}

bool IsRefusal(Code code) { return ExitCodeFor(Error::Of(code, "")) == kExitRefused; }

// An SSE "error" event or a JSON error body: {"error": CODE, "message": TEXT}.
Error ErrorFromJson(const json& j, Code fallback) {
  std::string message =
      j.is_object() && j.contains("message") && j["message"].is_string() ? j["message"].get<std::string>() : "";
  Code code = j.is_object() && j.contains("error") && j["error"].is_string() ? CodeNamed(j["error"].get<std::string>())
                                                                             : fallback;
  if (code == Code::kUnauthenticated) {
    message += "; set ISB_TOKEN to a bearer token, or use the unix socket (--socket) as the daemon's user";
  }
  return Error::Of(code, message);
}

Result<json> ParseObject(std::string_view text, const std::string& what) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Error::Of(Code::kInternal, "the isb daemon sent " + what + " that is not a JSON object: '" +
                                          std::string(text.substr(0, 200)) + "'");
  }
  return j;
}

Result<json> ResultOf(const json& envelope) {
  if (!envelope.contains("result")) {
    return Error::Of(Code::kInternal,
                     "the isb daemon's answer has no \"result\": " + Dump(envelope, -1).substr(0, 200));
  }
  // The call took effect; the operator has been told its outcome is missing from the audit log, and so is the user.
  if (auto it = envelope.find("audit_unrecorded"); it != envelope.end() && it->is_string())
    std::fprintf(stderr, "isb: warning: %s\n", it->get<std::string>().c_str());
  return envelope["result"];
}

}  // namespace

Result<Endpoint> ChooseEndpoint(const ConnectFlags& flags, const char* env_url, const char* env_socket) {
  if (!flags.url.empty() && !flags.socket.empty()) return Usage("give --url or --socket, not both");
  if (!flags.url.empty()) return ParseUrl(flags.url);
  Endpoint ep;
  if (!flags.socket.empty()) {
    ep.unix_path = flags.socket;
    return ep;
  }
  if (env_url != nullptr && *env_url != '\0') {
    auto parsed = ParseUrl(env_url);
    if (!parsed.ok()) return Usage("ISB_URL: " + parsed.error().message);
    return parsed;
  }
  ep.unix_path = env_socket != nullptr && *env_socket != '\0' ? env_socket : kDefaultSocket;
  return ep;
}

int ExitCodeFor(const Error& error) {
  switch (error.code) {
    case Code::kInvalidArgument:
    case Code::kNotFound:
    case Code::kConflict:
    case Code::kUnauthenticated:
    case Code::kForbidden:
    case Code::kTooLarge:
    case Code::kTooManyRequests:
      return kExitRefused;
    case Code::kInternal:
    case Code::kTimeout:
    case Code::kUnavailable:
      break;
  }
  return kExitIsbFailed;
}

Error DaemonError(int http_status, std::string_view body) {
  Code fallback = http_status >= 500 ? Code::kInternal : Code::kInvalidArgument;
  json j = json::parse(body, nullptr, false);
  Error e = ErrorFromJson(j.is_discarded() ? json() : j, fallback);
  if (e.message.empty()) {
    e.message = "the isb daemon answered HTTP " + std::to_string(http_status) +
                (body.empty() ? std::string() : ": " + std::string(body.substr(0, 200)));
  }
  // The status decides which side failed: a 5xx is never the caller's fault, a 4xx never isb's.
  if (http_status >= 500 && IsRefusal(e.code)) e.code = Code::kInternal;
  if (http_status >= 400 && http_status < 500 && !IsRefusal(e.code)) e.code = Code::kInvalidArgument;
  return e;
}

HttpRequest ToolClient::Request(const std::string& tool, const json& input, bool stream) const {
  HttpRequest req;
  req.method = "POST";
  req.target = "/api/v1/tools/" + tool + (stream ? "?stream=1" : "");
  req.headers = {{"Content-Type", "application/json"},
                 {"Accept", stream ? "text/event-stream, application/json" : "application/json"}};
  if (http_.endpoint().unix_path.empty() && !token_.empty())
    req.headers.emplace_back("Authorization", "Bearer " + token_);
  if (!org_.empty()) req.headers.emplace_back("X-Isb-Org", org_);
  req.body = Dump(input, -1);
  return req;
}

namespace {

// An answer too large for the client is isb failing (125), not a refusal like the daemon's own too_large.
Error Transport(Error e) {
  if (e.code == Code::kTooLarge) e.code = Code::kInternal;
  return e;
}

}  // namespace

Result<json> ToolClient::Call(const std::string& tool, const json& input) const {
  Result<HttpResponse> sent = http_.Send(Request(tool, input, false));
  if (!sent.ok()) return Transport(sent.error());
  HttpResponse& resp = *sent;
  if (resp.status != 200) return DaemonError(resp.status, resp.body);
  ISB_ASSIGN_OR_RETURN(json envelope, ParseObject(resp.body, "an answer"));
  return ResultOf(envelope);
}

Result<json> ToolClient::CallStreaming(
    const std::string& tool, const json& input,
    const std::function<void(const std::string&, const std::string&)>& on_output) const {
  std::optional<Result<json>> final;
  bool started = false;
  SseHandler handle = [&](const SseEvent& ev) {
    started = true;
    if (ev.event == "stdout" || ev.event == "stderr" || ev.event == "progress") {
      json j = json::parse(ev.data, nullptr, false);
      if (j.is_object() && j.contains("data") && j["data"].is_string()) {
        on_output(ev.event, j["data"].get<std::string>());
        return true;
      }
      final = Error::Of(Code::kInternal,
                        "the isb daemon sent a malformed " + ev.event + " event: " + ev.data.substr(0, 200));
      return false;
    }
    if (ev.event == "session") {
      json j = json::parse(ev.data, nullptr, false);
      if (j.is_object() && j.contains("session") && j["session"].is_string()) {
        on_output("session", j["session"].get<std::string>());
        return true;
      }
      final = Error::Of(Code::kInternal, "the isb daemon sent a malformed session event: " + ev.data.substr(0, 200));
      return false;
    }
    if (ev.event == "result" || ev.event == "error") {
      auto j = ParseObject(ev.data, "a " + ev.event + " event");
      if (!j.ok())
        final = j.error();
      else if (ev.event == "result")
        final = ResultOf(*j);
      else
        final = ErrorFromJson(*j, Code::kInternal);
      return false;
    }
    return true;  // events this client does not know are for newer clients
  };
  Result<HttpResponse> sent = http_.SendStreaming(Request(tool, input, true), handle);
  if (!sent.ok()) {
    if (final.has_value()) return std::move(*final);
    Error e = Transport(sent.error());
    if (started) e.message = "lost the isb daemon before the command finished; its outcome is unknown: " + e.message;
    return e;
  }
  HttpResponse& resp = *sent;
  if (resp.status != 200) return DaemonError(resp.status, resp.body);
  if (final.has_value()) return std::move(*final);
  if (resp.Header("Content-Type").find("text/event-stream") == std::string::npos) {
    // A daemon that does not stream this tool answers with plain JSON: its output arrives all at once.
    ISB_ASSIGN_OR_RETURN(json envelope, ParseObject(resp.body, "an answer"));
    ISB_ASSIGN_OR_RETURN(json result, ResultOf(envelope));
    for (const char* stream : {"stdout", "stderr"}) {
      if (result.contains(stream) && result[stream].is_string()) on_output(stream, result[stream].get<std::string>());
    }
    return result;
  }
  return Error::Of(Code::kUnavailable,
                   "the isb daemon ended the output stream without a result; the command's "
                   "outcome is unknown (see the daemon's log)");
}

}  // namespace isb::cli
