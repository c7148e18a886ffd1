#include "model/topology/pci_bus_id.h"

#include <gtest/gtest.h>

namespace rankscope {
namespace {

TEST(PciBusIdTest, NormalizesTheSpellingsOfNcclAndNvml) {
  EXPECT_EQ(NormalizePciBusId("0000:60:00.0"), "0000:60:00.0");
  EXPECT_EQ(NormalizePciBusId("00000000:60:00.0"), "0000:60:00.0");  // NVML pads the domain
  EXPECT_EQ(NormalizePciBusId("0000:B1:00.0"), "0000:b1:00.0");
  EXPECT_EQ(NormalizePciBusId(" 0000:1a:00.0\n"), "0000:1a:00.0");
  EXPECT_EQ(NormalizePciBusId("1:2:3.4"), "0001:02:03.4");
  // NCCL's placeholder for an NVLink peer hidden from a VM keeps its wide domain.
  EXPECT_EQ(NormalizePciBusId("fffffff:ff:ff.0"), "fffffff:ff:ff.0");
}

TEST(PciBusIdTest, RejectsWhatIsNotABusId) {
  for (const char* text : {"", "60", "0000:60:00", "0000:600:00.0", "0000:60:00.10", "zz:60:00.0",
                           "0000:60:00.0x", "0000::00.0", "123456789:00:00.0"}) {
    EXPECT_EQ(NormalizePciBusId(text), std::nullopt) << text;
    EXPECT_EQ(NcclShortBusId(text), "") << text;
  }
}

TEST(PciBusIdTest, ShortFormMatchesNcclLogs) {
  // The real 2xH200 log says "busId 60" for the GPU the dump lists as 0000:00:06.0.
  EXPECT_EQ(NcclShortBusId("0000:00:06.0"), "60");
  EXPECT_EQ(NcclShortBusId("0000:00:07.0"), "70");
  EXPECT_EQ(NcclShortBusId("0000:60:00.0"), "60000");
  EXPECT_EQ(NcclShortBusId("00000000:B1:00.0"), "b1000");
  EXPECT_EQ(NcclShortBusId("0001:60:00.1"), "160001");
  EXPECT_EQ(NcclBusIdValue("0000:60:00.0"), 0x60000);
}

}  // namespace
}  // namespace rankscope
