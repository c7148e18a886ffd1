#include "core/utf8.h"

#include <gtest/gtest.h>

namespace rankscope {
namespace {

constexpr char kFffd[] = "\xEF\xBF\xBD";

TEST(Utf8Test, ValidTextIsKept) {
  for (const char* s : {"", "allreduce", "caf\xC3\xA9", "\xE2\x82\xAC 5", "\xF0\x9F\x98\x80",
                        "\xF4\x8F\xBF\xBF", "\xED\x9F\xBF"}) {
    EXPECT_TRUE(IsValidUtf8(s)) << s;
    int replaced = 0;
    EXPECT_EQ(ValidUtf8(s, &replaced), s);
    EXPECT_EQ(replaced, 0);
  }
}

TEST(Utf8Test, Latin1ByteIsOneReplacement) {
  int replaced = 0;
  EXPECT_FALSE(IsValidUtf8("caf\xE9"));
  EXPECT_EQ(ValidUtf8("caf\xE9", &replaced), std::string("caf") + kFffd);
  EXPECT_EQ(replaced, 1);
}

// An NVTX name cut at 255 bytes in the middle of a three-byte character keeps what came before.
TEST(Utf8Test, SequenceCutShortIsOneReplacement) {
  EXPECT_EQ(ValidUtf8("step \xE2\x82"), std::string("step ") + kFffd);
  EXPECT_EQ(ValidUtf8("\xF0\x9F\x98"), kFffd);
  EXPECT_EQ(ValidUtf8("\xE2\x82x"), std::string(kFffd) + "x");
}

// A name longer than the limit is cut before the character that would not fit whole.
TEST(Utf8Test, CutNeverSplitsACharacter) {
  const std::string euro = "\xE2\x82\xAC";  // three bytes
  EXPECT_EQ(Utf8Cut("abc", 5), 3u);
  EXPECT_EQ(Utf8Cut("abcdef", 4), 4u);
  EXPECT_EQ(Utf8Cut("ab" + euro, 4), 2u);
  EXPECT_EQ(Utf8Cut("ab" + euro, 5), 5u);
  EXPECT_EQ(Utf8Cut("ab" + euro + "x", 5), 5u);
  EXPECT_EQ(Utf8Cut("\x80\x80\x80\x80\x80\x80", 5), 2u);  // no character to keep whole
  std::string name(254, 'n');
  name += euro;
  EXPECT_EQ(Utf8Cut(name, 255), 254u);
  EXPECT_TRUE(IsValidUtf8(name.substr(0, Utf8Cut(name, 255))));
}

TEST(Utf8Test, IllFormedSequencesAreReplacedByteByByteWhereNoPrefixIsValid) {
  // Overlong "/" (C0 AF), a surrogate (ED A0 80), above U+10FFFF (F4 90 80 80), stray
  // continuation bytes, 0xFF.
  EXPECT_EQ(ValidUtf8("\xC0\xAF"), std::string(kFffd) + kFffd);
  EXPECT_EQ(ValidUtf8("\xED\xA0\x80"), std::string(kFffd) + kFffd + kFffd);
  EXPECT_EQ(ValidUtf8("\xF4\x90\x80\x80"), std::string(kFffd) + kFffd + kFffd + kFffd);
  EXPECT_EQ(ValidUtf8("a\x80\xBF"), std::string("a") + kFffd + kFffd);
  EXPECT_EQ(ValidUtf8("\xFF"), kFffd);
  for (const char* s : {"\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\x80", "\xFF"}) {
    EXPECT_FALSE(IsValidUtf8(s)) << s;
    EXPECT_TRUE(IsValidUtf8(ValidUtf8(s)));
  }
}

TEST(Utf8Test, EveryTwoByteStringComesOutValid) {
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      const std::string s{static_cast<char>(a), static_cast<char>(b)};
      const std::string v = ValidUtf8(s);
      ASSERT_TRUE(IsValidUtf8(v)) << a << " " << b;
      if (IsValidUtf8(s)) {
        ASSERT_EQ(v, s);
      }
    }
  }
}

}  // namespace
}  // namespace rankscope
