#include "agent/inject/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace rankscope::inject {
namespace {

std::string Convert(const wchar_t* wide, size_t cap = 64) {
  char out[64];
  return std::string(out, WideToUtf8(wide, out, cap));
}

TEST(WideToUtf8, EncodesEveryLength) {
  EXPECT_EQ(Convert(L"abc"), "abc");
  EXPECT_EQ(Convert(L"\u00fc"), "\xc3\xbc");
  EXPECT_EQ(Convert(L"\u20ac"), "\xe2\x82\xac");
  EXPECT_EQ(Convert(L"\U0001F600"), "\xf0\x9f\x98\x80");
}

TEST(WideToUtf8, ReplacesInvalidCodePoints) {
  const wchar_t surrogate[] = {L'a', static_cast<wchar_t>(0xD800), L'b', 0};
  const wchar_t too_big[] = {static_cast<wchar_t>(0x110000), 0};
  EXPECT_EQ(Convert(surrogate),
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(Convert(too_big), "\xef\xbf\xbd");
}

TEST(WideToUtf8, NeverSplitsACharacter) {
  EXPECT_EQ(Convert(L"a\u20ac", 3), "a");
  EXPECT_EQ(Convert(L"a\u20ac", 4), "a\xe2\x82\xac");
  EXPECT_EQ(Convert(nullptr), "");
}

}  // namespace
}  // namespace rankscope::inject
