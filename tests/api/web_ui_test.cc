// WebUi: which file a path gets, its caching, and the page security headers on every answer.
#include "api/web_ui.h"

#include <gtest/gtest.h>

namespace isb::api {
namespace {

const WebAsset kAssets[] = {
    {"/index.html", "text/html; charset=utf-8", "\"i1\"", "<!doctype html>", false},
    {"/assets/app-ABC123.js", "text/javascript; charset=utf-8", "\"j1\"", "console.log(1)", true},
};

Request Get(std::string target, std::string method = "GET") {
  Request req;
  req.method = std::move(method);
  req.target = std::move(target);
  return req;
}

void ExpectSecurityHeaders(const Response& r) {
  EXPECT_EQ(r.headers.Get("Content-Security-Policy"),
            "default-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'");
  EXPECT_EQ(r.headers.Get("X-Frame-Options"), "DENY");
  EXPECT_EQ(r.headers.Get("Referrer-Policy"), "no-referrer");
  EXPECT_EQ(r.headers.Get("X-Content-Type-Options"), "nosniff");
}

TEST(WebUiTest, TheRootIsTheIndexRevalidatedOnEveryLoad) {
  WebUi ui(kAssets);
  Response r = ui.Handle(Get("/"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "<!doctype html>");
  EXPECT_EQ(r.headers.Get("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(r.headers.Get("Cache-Control"), "no-cache");
  EXPECT_EQ(r.headers.Get("ETag"), "\"i1\"");
  ExpectSecurityHeaders(r);
}

TEST(WebUiTest, AHashedAssetIsImmutableAndItsEtagGets304) {
  WebUi ui(kAssets);
  Response r = ui.Handle(Get("/assets/app-ABC123.js"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "console.log(1)");
  EXPECT_EQ(r.headers.Get("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(r.headers.Get("Cache-Control"), "public, max-age=31536000, immutable");
  ExpectSecurityHeaders(r);
  for (const char* tag : {"\"j1\"", "W/\"j1\"", "\"x\", \"j1\"", "*"}) {
    Request again = Get("/assets/app-ABC123.js");
    again.headers.Set("If-None-Match", tag);
    Response cached = ui.Handle(again);
    EXPECT_EQ(cached.status, 304) << tag;
    EXPECT_EQ(cached.body, "") << tag;
    EXPECT_EQ(cached.headers.Get("ETag"), "\"j1\"");
  }
  Request stale = Get("/assets/app-ABC123.js");
  stale.headers.Set("If-None-Match", "\"j0\"");
  EXPECT_EQ(ui.Handle(stale).status, 200);
}

TEST(WebUiTest, AnUnknownFileIs404AndAnotherMethod405WithTheHeadersStill) {
  WebUi ui(kAssets);
  Response missing = ui.Handle(Get("/assets/nope.js"));
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body,
            R"({"error":"not_found","message":"no route for /assets/nope.js; see GET /api/v1/openapi.json"})");
  ExpectSecurityHeaders(missing);
  // The index is served at / only: one URL per page.
  EXPECT_EQ(ui.Handle(Get("/index.html")).status, 404);
  Response post = ui.Handle(Get("/", "POST"));
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.headers.Get("Allow"), "GET, HEAD");
  ExpectSecurityHeaders(post);
  EXPECT_EQ(ui.Handle(Get("/", "HEAD")).status, 200);
}

}  // namespace
}  // namespace isb::api
