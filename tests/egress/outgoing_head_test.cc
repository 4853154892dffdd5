#include "egress/outgoing_head.h"

#include <gtest/gtest.h>

#include "egress/parsed_messages.h"

namespace isb::egress {
namespace {

TEST(OutgoingHead, AHeadNoOneChangedGoesAsItCameByteForByte) {
  const std::string raw = "POST /a HTTP/1.1\r\nHost:   example.test  \r\nContent-Length: 3\r\n\r\n";
  HttpHead head = Request(raw);
  OutgoingHead out = OutgoingHead::Request(raw, head, head);
  EXPECT_FALSE(out.changed());
  EXPECT_EQ(out.Bytes(), raw);
  out.SetFraming(Reframe::kAsSent);
  EXPECT_EQ(out.Bytes(), raw);
}

TEST(OutgoingHead, AnEditedRequestIsWrittenFromItsParts) {
  const std::string raw =
      "POST /a?k=PLACEHOLDER HTTP/1.1\r\nHost: example.test\r\nContent-Length: 3\r\nX-A:  b\r\n\r\n";
  HttpHead head = Request(raw);
  HttpHead edited = head;
  edited.target = "/a?k=s3cr3t";
  edited.headers.push_back({"Authorization", "Bearer s3cr3t"});
  OutgoingHead out = OutgoingHead::Request(raw, head, edited);
  EXPECT_TRUE(out.changed());
  EXPECT_EQ(out.Bytes(),
            "POST /a?k=s3cr3t HTTP/1.1\r\nHost: example.test\r\nX-A: b\r\nAuthorization: Bearer s3cr3t\r\n"
            "Content-Length: 3\r\n\r\n");
}

TEST(OutgoingHead, AFilterCannotChangeTheFramingFields) {
  const std::string raw = "POST / HTTP/1.1\r\nHost: example.test\r\nContent-Length: 3\r\n\r\n";
  HttpHead head = Request(raw);
  HttpHead edited = head;
  edited.headers[1].value = "300";
  edited.headers.push_back({"Transfer-Encoding", "chunked"});
  EXPECT_EQ(OutgoingHead::Request(raw, head, edited).Bytes(),
            "POST / HTTP/1.1\r\nHost: example.test\r\nContent-Length: 3\r\n\r\n");
}

TEST(OutgoingHead, ABodyFramedAnewReplacesTheFramingFields) {
  const std::string raw = "PUT / HTTP/1.1\r\nContent-Length: 3\r\nHost: example.test\r\n\r\n";
  HttpHead head = Request(raw);
  OutgoingHead chunked = OutgoingHead::Request(raw, head, head);
  chunked.SetFraming(Reframe::kChunked);
  EXPECT_EQ(chunked.Bytes(), "PUT / HTTP/1.1\r\nHost: example.test\r\nTransfer-Encoding: chunked\r\n\r\n");
  OutgoingHead held = OutgoingHead::Request(raw, head, head);
  held.SetFraming(Reframe::kBuffered, 12);
  EXPECT_EQ(held.Bytes(), "PUT / HTTP/1.1\r\nHost: example.test\r\nContent-Length: 12\r\n\r\n");
  OutgoingHead unframed = OutgoingHead::Request(raw, head, head);
  unframed.SetFraming(Reframe::kUntilClose);
  EXPECT_EQ(unframed.Bytes(), "PUT / HTTP/1.1\r\nHost: example.test\r\n\r\n");
}

TEST(OutgoingHead, AnEditedResponseKeepsItsStatusLine) {
  const std::string raw = "HTTP/1.1 404 Not  Found\r\nContent-Length: 3\r\nX-Echo: PLACEHOLDER\r\n\r\n";
  ResponseHead head = Response(raw);
  EXPECT_EQ(head.reason, "Not  Found");
  ResponseHead edited = head;
  edited.headers[1].value = "[scrubbed]";
  OutgoingHead out = OutgoingHead::Response(raw, head, edited);
  out.SetFraming(Reframe::kChunked);
  EXPECT_EQ(out.Bytes(), "HTTP/1.1 404 Not  Found\r\nX-Echo: [scrubbed]\r\nTransfer-Encoding: chunked\r\n\r\n");
  const std::string bare = "HTTP/1.0 200\r\nX: y\r\n\r\n";
  ResponseHead no_reason = Response(bare);
  ResponseHead renamed = no_reason;
  renamed.headers[0].name = "Y";
  EXPECT_EQ(OutgoingHead::Response(bare, no_reason, renamed).Bytes(), "HTTP/1.0 200 \r\nY: y\r\n\r\n");
}

}  // namespace
}  // namespace isb::egress
