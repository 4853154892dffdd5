// The tar reader: every header form (ustar with prefix, GNU long names and base-256, pax records) decoded to the
// exact entry, data read and skipped across entries, and each malformed header or truncation an exact error.
#include "image/tar_reader.h"

#include <gtest/gtest.h>

#include <string>

#include "image/tar_builder.h"

namespace isb::image {
namespace {

using testing::TarBuilder;
using testing::TarHeader;
using Type = TarEntry::Type;

// Reads every entry and its data: "path:data" per file, the entries themselves in `entries`.
struct ReadBack {
  std::vector<TarEntry> entries;
  std::vector<std::string> data;
};

Result<ReadBack> ReadAll(const std::string& tar) {
  StringSource in(tar);
  TarReader r(in);
  ReadBack out;
  for (;;) {
    ISB_ASSIGN_OR_RETURN(std::optional<TarEntry> e, r.Next());
    if (!e) return out;
    std::string data;
    uint8_t buf[100];
    for (;;) {
      ISB_ASSIGN_OR_RETURN(size_t n, r.ReadData(buf));
      if (n == 0) break;
      data.append(reinterpret_cast<const char*>(buf), n);
    }
    out.entries.push_back(std::move(*e));
    out.data.push_back(std::move(data));
  }
}

TEST(TarReaderTest, UstarEntriesOfEveryTypeDecodeExactly) {
  const std::string tar =
      TarBuilder()
          .Entry({.name = "etc/", .type = '5', .mode = 0755, .uid = 0, .gid = 0})
          .Entry({.name = "etc/hosts", .mode = 04755, .uid = 1000, .gid = 100, .mtime = 1234}, "127.0.0.1 localhost\n")
          .Symlink("bin", "usr/bin")
          .Hardlink("etc/hosts2", "etc/hosts")
          .Device("dev/null", '3', 1, 3)
          .Device("dev/sda", '4', 8, 0)
          .Entry({.name = "run/fifo", .type = '6'})
          .End();
  Result<ReadBack> r = ReadAll(tar);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->entries.size(), 7u);
  const TarEntry& f = r->entries[1];
  EXPECT_EQ(f.type, Type::kFile);
  EXPECT_EQ(f.path, "etc/hosts");
  EXPECT_EQ(f.size, 20u);
  EXPECT_EQ(f.mode, 04755u);
  EXPECT_EQ(f.uid, 1000u);
  EXPECT_EQ(f.gid, 100u);
  EXPECT_EQ(f.mtime, 1234);
  EXPECT_EQ(r->data[1], "127.0.0.1 localhost\n");
  EXPECT_EQ(r->entries[0].type, Type::kDir);
  EXPECT_EQ(r->entries[2].type, Type::kSymlink);
  EXPECT_EQ(r->entries[2].link, "usr/bin");
  EXPECT_EQ(r->entries[3].type, Type::kHardlink);
  EXPECT_EQ(r->entries[3].link, "etc/hosts");
  EXPECT_EQ(r->entries[4].type, Type::kChar);
  EXPECT_EQ(r->entries[4].dev_major, 1u);
  EXPECT_EQ(r->entries[4].dev_minor, 3u);
  EXPECT_EQ(r->entries[5].type, Type::kBlock);
  EXPECT_EQ(r->entries[5].dev_major, 8u);
  EXPECT_EQ(r->entries[6].type, Type::kFifo);
}

TEST(TarReaderTest, AUstarPrefixJoinsTheNameButAGnuHeaderHasNoPrefix) {
  TarHeader posix{.name = "file", .prefix = "deep/dir"};
  TarHeader gnu{.name = "gnufile", .prefix = "ignored", .gnu = true};
  Result<ReadBack> r = ReadAll(TarBuilder().Entry(posix, "a").Entry(gnu, "b").End());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->entries[0].path, "deep/dir/file");
  EXPECT_EQ(r->entries[1].path, "gnufile");
}

TEST(TarReaderTest, GnuLongNamesAndLinksReplaceTheHeadersFields) {
  const std::string long_name = std::string(150, 'n') + "/" + std::string(120, 'm');
  const std::string long_link = std::string(200, 't');
  Result<ReadBack> r = ReadAll(TarBuilder()
                                   .GnuLongName(long_name)
                                   .GnuLongLink(long_link)
                                   .Entry({.name = "truncated", .type = '2', .link = "short", .gnu = true})
                                   .File("next", "x")
                                   .End());
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->entries.size(), 2u);
  EXPECT_EQ(r->entries[0].path, long_name);
  EXPECT_EQ(r->entries[0].link, long_link);
  EXPECT_EQ(r->entries[1].path, "next");
  EXPECT_EQ(r->entries[1].link, "");
}

TEST(TarReaderTest, PaxRecordsOverrideTheHeaderForTheNextEntryOnly) {
  const std::string tar = TarBuilder()
                              .Pax({{"path", "a/very/long/pax/name"},
                                    {"linkpath", "target"},
                                    {"uid", "4000000000"},
                                    {"gid", "7"},
                                    {"mtime", "1700000000.123456789123"},
                                    {"size", "3"},
                                    {"SCHILY.xattr.user.note", std::string("v\0al", 4)},
                                    {"SCHILY.xattr.security.capability", "caps"},
                                    {"atime", "1"},
                                    {"comment", "ignored"}})
                              .Entry({.name = "short", .size = 999}, "abc")
                              .File("plain", "d")
                              .End();
  Result<ReadBack> r = ReadAll(tar);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const TarEntry& e = r->entries[0];
  EXPECT_EQ(e.path, "a/very/long/pax/name");
  EXPECT_EQ(e.link, "target");
  EXPECT_EQ(e.uid, 4000000000u);
  EXPECT_EQ(e.gid, 7u);
  EXPECT_EQ(e.mtime, 1700000000);
  EXPECT_EQ(e.mtime_nsec, 123456789u);
  EXPECT_EQ(e.size, 3u);
  EXPECT_EQ(r->data[0], "abc");
  using X = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(e.xattrs, (X{{"user.note", std::string("v\0al", 4)}, {"security.capability", "caps"}}));
  EXPECT_EQ(r->entries[1].path, "plain");
  EXPECT_EQ(r->entries[1].uid, 0u);
  EXPECT_TRUE(r->entries[1].xattrs.empty());
  EXPECT_EQ(r->data[1], "d");
}

TEST(TarReaderTest, APaxMtimeBeforeTheEpochRoundsDown) {
  Result<ReadBack> r = ReadAll(TarBuilder().Pax({{"mtime", "-1.25"}}).File("old", "").End());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->entries[0].mtime, -2);
  EXPECT_EQ(r->entries[0].mtime_nsec, 750000000u);
}

TEST(TarReaderTest, APaxGlobalHeaderIsSkipped) {
  Result<ReadBack> r = ReadAll(
      TarBuilder().Entry({.name = "global", .type = 'g'}, testing::PaxRecord("path", "x")).File("f", "1").End());
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->entries.size(), 1u);
  EXPECT_EQ(r->entries[0].path, "f");
}

TEST(TarReaderTest, ABase256SizeIsRead) {
  Result<ReadBack> r = ReadAll(TarBuilder().Entry({.name = "b", .base256_size = true}, "hello").End());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->entries[0].size, 5u);
  EXPECT_EQ(r->data[0], "hello");
}

TEST(TarReaderTest, AnOldStyleNameEndingInASlashIsADirectory) {
  Result<ReadBack> r = ReadAll(TarBuilder().Entry({.name = "olddir/", .type = '\0'}).End());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->entries[0].type, Type::kDir);
}

TEST(TarReaderTest, LinksAndDirectoriesHaveNoDataWhateverTheirSizeField) {
  Result<ReadBack> r = ReadAll(TarBuilder()
                                   .Entry({.name = "d", .type = '5', .size = 0})
                                   .Entry({.name = "l", .type = '2', .link = "x", .size = 0})
                                   .File("f", "data")
                                   .End());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->entries[0].size, 0u);
  EXPECT_EQ(r->entries[1].size, 0u);
  EXPECT_EQ(r->data[2], "data");
}

TEST(TarReaderTest, NextSkipsUnreadDataAndDrainReadsThePaddingAfterTheEnd) {
  const std::string tar =
      TarBuilder().File("a", std::string(1000, 'a')).File("b", "bb").End() + std::string(9216, '\0');
  StringSource in(tar);
  TarReader r(in);
  EXPECT_EQ((*r.Next())->path, "a");
  uint8_t one;
  EXPECT_EQ(*r.ReadData({&one, 1}), 1u);
  EXPECT_EQ((*r.Next())->path, "b");
  EXPECT_FALSE(r.Next()->has_value());
  EXPECT_FALSE(r.Next()->has_value());
  EXPECT_EQ(r.offset(), 512u + 1024 + 512 + 512 + 512);
  EXPECT_EQ(*r.Drain(), 512u + 9216);
  EXPECT_EQ(r.offset(), tar.size());
}

TEST(TarReaderTest, AStreamEndingAtAHeaderBoundaryEndsTheArchive) {
  Result<ReadBack> r = ReadAll(TarBuilder().File("a", "1").bytes());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->entries.size(), 1u);
  EXPECT_TRUE(ReadAll("")->entries.empty());
}

TEST(TarReaderTest, ATruncatedHeaderIsAnError) {
  Result<ReadBack> r = ReadAll(TarBuilder().File("a", "1").bytes() + std::string(100, 'x'));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "tar header at byte 1024: truncated (100 of 512 bytes)");
}

TEST(TarReaderTest, DataEndingBeforeTheDeclaredSizeIsAnErrorNamingTheEntry) {
  const std::string tar = TarBuilder().Entry({.name = "cut", .size = 5000}, "only this").bytes();
  Result<ReadBack> r = ReadAll(tar.substr(0, 512 + 9));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_EQ(r.error().message, "tar entry \"cut\": truncated (the archive ended after 9 of its 5000 data bytes)");
}

TEST(TarReaderTest, SkippingPastTheEndOfTruncatedDataIsAnErrorNamingTheEntry) {
  const std::string tar = TarBuilder().Entry({.name = "cut", .size = 5000}, "only this").bytes();
  StringSource in(std::string_view(tar).substr(0, 512 + 9));
  TarReader r(in);
  EXPECT_EQ((*r.Next())->path, "cut");
  Result<std::optional<TarEntry>> next = r.Next();
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.error().message,
            "tar entry \"cut\": truncated (the archive ended 5111 bytes before the end of this entry)");
}

TEST(TarReaderTest, MoreDataThanDeclaredIsReadAsTheNextHeaderAndFailsItsChecksum) {
  const std::string tar = TarBuilder().Entry({.name = "f", .size = 3}, std::string(600, 'A')).End();
  Result<ReadBack> r = ReadAll(tar);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "tar header at byte 1024: checksum mismatch (stored 0, computed 5976): not a tar "
            "header, or a corrupt one");
}

TEST(TarReaderTest, AHeaderWithAWrongChecksumIsAnError) {
  std::string tar = TarBuilder().File("a", "1").End();
  tar[0] = 'b';
  Result<ReadBack> r = ReadAll(tar);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_TRUE(r.error().message.starts_with("tar header at byte 0: checksum mismatch (stored ")) << r.error().message;
}

TEST(TarReaderTest, ANonOctalNumberIsAnErrorNamingTheField) {
  std::string block = testing::HeaderBlock({.name = "a"}, 0);
  block[108] = '9';  // uid
  // Re-sign the header so that only the number is wrong.
  std::memset(block.data() + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : block) sum += c;
  std::snprintf(block.data() + 148, 7, "%06o", sum);
  Result<ReadBack> r = ReadAll(block + std::string(1024, '\0'));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "tar header at byte 0: uid: not an octal number (byte 57)");
}

TEST(TarReaderTest, MalformedPaxRecordsAreErrors) {
  for (const std::string& bad : {std::string("5 a=b\n"), std::string("99 path=x\n"), std::string("x path=y\n"),
                                 std::string("8 path=x"), std::string("6 =xy\n")}) {
    Result<ReadBack> r = ReadAll(TarBuilder().Entry({.name = "p", .type = 'x'}, bad).File("f", "").End());
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(r.error().message.starts_with("tar header at byte 0: malformed pax record")) << r.error().message;
  }
}

TEST(TarReaderTest, APaxPathWithANulByteIsRefused) {
  Result<ReadBack> r = ReadAll(TarBuilder().Pax({{"path", std::string("a\0/etc/passwd", 13)}}).File("f", "").End());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "tar header at byte 0: pax path holds a NUL byte");
}

TEST(TarReaderTest, APaxNumberOutOfRangeIsRefused) {
  Result<ReadBack> r = ReadAll(TarBuilder().Pax({{"uid", "4294967296"}}).File("f", "").End());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "tar header at byte 0: pax uid \"4294967296\" is not a number in range");
}

TEST(TarReaderTest, GnuSparseFilesAreRefused) {
  Result<ReadBack> r = ReadAll(TarBuilder().Entry({.name = "sparse", .type = 'S', .gnu = true}).End());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "tar header at byte 0: entry \"sparse\" has the unsupported type 'S' (GNU sparse and "
            "multi-volume archives are not supported)");
  Result<ReadBack> pax = ReadAll(TarBuilder().Pax({{"GNU.sparse.major", "1"}}).File("f", "").End());
  ASSERT_FALSE(pax.ok());
  EXPECT_EQ(pax.error().message, "tar header at byte 0: GNU sparse files are not supported (pax GNU.sparse.major)");
}

TEST(TarReaderTest, AnEntryWithAnEmptyNameIsRefused) {
  Result<ReadBack> r = ReadAll(TarBuilder().Entry({.name = ""}).End());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "tar header at byte 0: an entry with an empty name");
}

TEST(TarReaderTest, MetadataPastTheLimitIsRefusedBeforeItIsRead) {
  Result<ReadBack> r = ReadAll(TarBuilder().Entry({.name = "L", .type = 'L', .gnu = true, .size = 2 << 20}).End());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kTooLarge);
  EXPECT_EQ(r.error().message, "tar header at byte 0: GNU long name of 2097152 bytes (at most 1048576)");
}

TEST(TarReaderTest, MetadataForOneEntryIsBoundedAltogether) {
  const std::string records = testing::PaxRecord("SCHILY.xattr.user.a", std::string(600 << 10, 'x'));
  Result<ReadBack> r = ReadAll(TarBuilder()
                                   .Entry({.name = "p1", .type = 'x'}, records)
                                   .Entry({.name = "p2", .type = 'x'}, records)
                                   .File("f", "")
                                   .End());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kTooLarge);
  const uint64_t second = 512 + (records.size() + 511) / 512 * 512;
  EXPECT_EQ(r.error().message, "tar header at byte " + std::to_string(second) +
                                   ": metadata for one entry past "
                                   "1048576 bytes");
}

}  // namespace
}  // namespace isb::image
