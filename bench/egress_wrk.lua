-- wrk through an HTTP proxy: wrk connects to the URL it is given (the proxy) and, with this script, sends every
-- request in absolute form for the origin named by TARGET (http://host:port/path), as a client configured with
-- HTTP_PROXY does.
local target = os.getenv("TARGET")
if target then
  wrk.path = target
  wrk.headers["Host"] = target:match("^http://([^/]+)")
end
