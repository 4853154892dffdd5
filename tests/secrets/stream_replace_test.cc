// The stream replacer: leftmost-longest replacement, the same output for every cut of the input, what it keeps back
// and how it counts.
#include "secrets/stream_replace.h"

#include <gtest/gtest.h>

#include <random>

namespace isb::secrets {
namespace {

std::shared_ptr<const ReplaceSet> Set(std::vector<Replacement> pairs) {
  return std::make_shared<const ReplaceSet>(std::move(pairs));
}

// The input fed in pieces of `piece` bytes.
std::string Streamed(const std::shared_ptr<const ReplaceSet>& set, std::string_view input, size_t piece) {
  StreamReplacer stream(set);
  std::string out;
  for (size_t at = 0; at < input.size(); at += piece) stream.Take(input.substr(at, piece), out);
  stream.Finish(out);
  return out;
}

// The scan for where a needle may start takes 16 bytes a step when at most eight bytes start needles, and reads the
// table byte by byte past that: a needle at each place around a 16-byte block's edges is found either way, in one
// piece or cut into pieces of every size around 16.
TEST(StreamReplacer, NeedlesAreFoundAtEveryPlaceAroundTheScansBlocksWithFewOrManyStartingBytes) {
  for (const std::string starts : {"Q", "QRSTUVWX", "QRSTUVWXY"}) {  // one, eight (the most scanned 16 at a time), nine
    std::vector<Replacement> pairs;
    for (char c : starts) pairs.push_back({std::string(1, c) + "-needle", std::string("<") + c + ">"});
    auto set = Set(pairs);
    for (size_t at : {0, 1, 14, 15, 16, 17, 31, 32, 33, 63, 64, 190}) {
      std::string input(200, '.');
      const char c = starts[at % starts.size()];
      input.replace(at, 8, std::string(1, c) + "-needle");
      std::string expected = input;
      expected.replace(at, 8, std::string("<") + c + ">");
      EXPECT_EQ(set->ReplaceAll(input), expected) << starts << " at " << at;
      for (size_t piece : {1, 15, 16, 17, 33})
        EXPECT_EQ(Streamed(set, input, piece), expected) << starts << " at " << at << " in pieces of " << piece;
    }
  }
}

TEST(StreamReplacer, ReplacesEveryOccurrenceOfEachNeedle) {
  auto set = Set({{"PH_ONE", "value-1"}, {"PH_TWO", "v2"}});
  EXPECT_EQ(set->ReplaceAll("a PH_ONE b PH_TWO c PH_ONE"), "a value-1 b v2 c value-1");
}

TEST(StreamReplacer, TheLongestNeedleStartingLeftmostWins) {
  auto set = Set({{"abc", "1"}, {"abcdef", "2"}, {"bcd", "3"}});
  EXPECT_EQ(set->ReplaceAll("abcdef"), "2");
  EXPECT_EQ(set->ReplaceAll("abcdeX"), "1deX");
  EXPECT_EQ(set->ReplaceAll("xbcdef"), "x3ef");
}

TEST(StreamReplacer, ALeftmostNeedleBeatsALongerOneStartingLater) {
  auto set = Set({{"ab", "1"}, {"bcdefg", "2"}});
  EXPECT_EQ(set->ReplaceAll("abcdefg"), "1cdefg");
}

TEST(StreamReplacer, MatchesDoNotOverlapAndScanningResumesAfterAReplacement) {
  auto set = Set({{"aa", "X"}});
  EXPECT_EQ(set->ReplaceAll("aaaaa"), "XXa");
  auto nested = Set({{"abab", "Y"}});
  EXPECT_EQ(nested->ReplaceAll("abababab"), "YY");
}

TEST(StreamReplacer, ANeedleListedTwiceKeepsItsFirstReplacement) {
  auto set = Set({{"k", "first"}, {"k", "second"}, {"", "ignored"}});
  std::vector<uint64_t> counts;
  EXPECT_EQ(set->ReplaceAll("k-k", &counts), "first-first");
  EXPECT_EQ(counts, (std::vector<uint64_t>{2, 0, 0}));
}

TEST(StreamReplacer, AnEmptySetPassesEverythingAtOnce) {
  StreamReplacer stream(Set({}));
  std::string out;
  stream.Take("abc", out);
  EXPECT_EQ(out, "abc");
  EXPECT_EQ(stream.kept(), 0u);
}

TEST(StreamReplacer, ANeedleCutAtEveryPointIsStillReplaced) {
  auto set = Set({{"isb_placeholder_XYZ", "s3cr3t"}});
  const std::string input = "head isb_placeholder_XYZ mid isb_placeholder_XY tail isb_placeholder_XYZ";
  for (size_t piece = 1; piece <= input.size(); ++piece)
    EXPECT_EQ(Streamed(set, input, piece), "head s3cr3t mid isb_placeholder_XY tail s3cr3t") << "pieces of " << piece;
}

TEST(StreamReplacer, KeepsBackAtMostTheLongestNeedleLessOneByte) {
  auto set = Set({{"abcdef", "1"}, {"cd", "2"}});
  StreamReplacer stream(set);
  std::string out;
  stream.Take("xxabcde", out);
  EXPECT_EQ(out, "xx");
  EXPECT_EQ(stream.kept(), 5u);
  stream.Take("Xy", out);
  EXPECT_EQ(out, "xxab2eXy");
  EXPECT_EQ(stream.kept(), 0u);
  const std::string input(100000, 'a');
  StreamReplacer long_run(Set({{std::string(40, 'a') + "b", "!"}}));
  size_t most = 0;
  std::string sink;
  for (size_t at = 0; at < input.size(); at += 777) {
    long_run.Take(std::string_view(input).substr(at, 777), sink);
    most = std::max(most, long_run.kept());
  }
  EXPECT_EQ(most, 40u);
}

TEST(StreamReplacer, CountsEachPairsReplacements) {
  auto set = Set({{"A1", "x"}, {"B2", "y"}});
  StreamReplacer stream(set);
  std::string out;
  stream.Take("A1 B2 A", out);
  stream.Take("1", out);
  stream.Finish(out);
  EXPECT_EQ(out, "x y x");
  EXPECT_EQ(stream.counts(), (std::vector<uint64_t>{2, 1}));
}

// Against a plain scan: at each position the longest needle starting there, else the byte.
std::string Reference(const std::vector<Replacement>& pairs, std::string_view text) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    const Replacement* best = nullptr;
    for (const Replacement& p : pairs)
      if (!p.needle.empty() && text.substr(at).starts_with(p.needle) &&
          (!best || p.needle.size() > best->needle.size()))
        best = &p;
    if (best) {
      out += best->replacement;
      at += best->needle.size();
    } else {
      out += text[at++];
    }
  }
  return out;
}

TEST(StreamReplacer, RandomStreamsCutAtRandomPointsMatchAPlainScan) {
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    std::vector<Replacement> pairs;
    const int count = 1 + rng() % 5;
    for (int i = 0; i < count; ++i) {
      std::string needle;
      for (size_t n = 1 + rng() % 6; n > 0; --n) needle += static_cast<char>('a' + rng() % 3);
      pairs.push_back({needle, std::string(rng() % 4, 'X')});
    }
    // Keep the first of duplicate needles, as the set does.
    std::vector<Replacement> unique;
    for (const Replacement& p : pairs)
      if (std::none_of(unique.begin(), unique.end(), [&](const Replacement& u) { return u.needle == p.needle; }))
        unique.push_back(p);
    std::string text;
    for (size_t n = rng() % 200; n > 0; --n) text += static_cast<char>('a' + rng() % 3);
    auto set = Set(pairs);
    StreamReplacer stream(set);
    std::string out;
    for (size_t at = 0; at < text.size();) {
      const size_t piece = 1 + rng() % 9;
      stream.Take(std::string_view(text).substr(at, piece), out);
      ASSERT_LT(stream.kept(), set->longest());
      at += piece;
    }
    stream.Finish(out);
    ASSERT_EQ(out, Reference(unique, text)) << "text " << text;
  }
}

}  // namespace
}  // namespace isb::secrets
