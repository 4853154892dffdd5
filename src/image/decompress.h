// Layer decompression: gzip (zlib) and zstd (libzstd) as ByteSources, told apart by their magic bytes, and bounded so
// that a decompression bomb ends in an error rather than a full disk.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "image/byte_source.h"

namespace isb::image {

enum class Compression { kNone, kGzip, kZstd };

std::string_view CompressionName(Compression c);  // "none", "gzip", "zstd"

// By magic bytes (gzip 1f 8b, zstd 28 b5 2f fd); anything else, and too few bytes to tell, is kNone.
Compression SniffCompression(std::span<const uint8_t> first);

// A source of `in` decompressed. More than `max_out` bytes out is an error (a bomb): kTooLarge naming the limit.
// kNone passes bytes through under the same limit. Errors name the coding: a stream that ends before its end
// ("gzip stream: truncated ..."), corrupt data (the library's reason), bytes after the end that are not another
// gzip member or zstd frame. `in` must outlive the source.
std::unique_ptr<ByteSource> Decompressing(ByteSource& in, Compression c, uint64_t max_out);

}  // namespace isb::image
