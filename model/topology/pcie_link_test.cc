#include "model/topology/pcie_link.h"

#include <gtest/gtest.h>

namespace rankscope {
namespace {

TEST(PcieLinkTest, ReadsNewAndOldKernelSpellings) {
  PcieLink gen5 = ParsePcieLink("32.0 GT/s PCIe", "16");
  EXPECT_EQ(gen5.speed_text, "32.0 GT/s PCIe");
  EXPECT_EQ(gen5.gt_per_s, 32.0);
  EXPECT_EQ(gen5.gen, 5);
  EXPECT_EQ(gen5.width_lanes, 16);

  PcieLink gen4 = ParsePcieLink("16 GT/s", "8");  // kernels up to 5.6
  EXPECT_EQ(gen4.gen, 4);
  EXPECT_EQ(gen4.width_lanes, 8);

  EXPECT_EQ(ParsePcieLink("2.5 GT/s PCIe", "1").gen, 1);
  EXPECT_EQ(ParsePcieLink("5.0 GT/s PCIe", "4").gen, 2);
  EXPECT_EQ(ParsePcieLink("8.0 GT/s PCIe", "16").gen, 3);
  EXPECT_EQ(ParsePcieLink("64.0 GT/s PCIe", "16").gen, 6);
}

TEST(PcieLinkTest, WhatNcclCouldNotReadIsUnknownNotZero) {
  // NCCL writes link_speed="" and link_width="0" when sysfs hides them (VMs).
  for (auto [speed, width] : {std::pair{"", "0"}, std::pair{"Unknown", ""},
                              std::pair{"Unknown speed", "x"}, std::pair{"GT/s", "-1"}}) {
    PcieLink link = ParsePcieLink(speed, width);
    EXPECT_EQ(link.gt_per_s, std::nullopt) << speed;
    EXPECT_EQ(link.gen, std::nullopt) << speed;
    EXPECT_EQ(link.width_lanes, std::nullopt) << width;
  }
  PcieLink odd = ParsePcieLink("24 GT/s", "16");  // a rate no generation has: keep the rate
  EXPECT_EQ(odd.gt_per_s, 24.0);
  EXPECT_EQ(odd.gen, std::nullopt);
}

TEST(PcieLinkTest, FormatsUnknownPartsAsQuestionMarks) {
  EXPECT_EQ(FormatPcieLink(ParsePcieLink("32.0 GT/s PCIe", "16")), "gen5 x16");
  EXPECT_EQ(FormatPcieLink(ParsePcieLink("32.0 GT/s PCIe", "0")), "gen5 x?");
  EXPECT_EQ(FormatPcieLink(PcieLink()), "gen? x?");
}

}  // namespace
}  // namespace rankscope
