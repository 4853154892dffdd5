// zlib for the secrets tests: a text deflated or inflated whole, in any of zlib's wrappings.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <string_view>

namespace isb::secrets {

// zlib with `bits` (31 gzip, 15 zlib, -15 raw), whole.
inline std::string ZlibWhole(std::string_view text, int bits) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, text.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

inline std::string UnzlibWhole(std::string_view data, int bits) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, bits), Z_OK);
  std::string out(8 << 20, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&z, Z_SYNC_FLUSH);
  EXPECT_TRUE(rc == Z_STREAM_END || rc == Z_OK) << rc;
  out.resize(z.total_out);
  inflateEnd(&z);
  return out;
}

}  // namespace isb::secrets
