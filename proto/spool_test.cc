#include "proto/spool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace rankscope {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/rankscope-spool-test-" + std::to_string(getpid()) + "-" + name;
}

v1::UploadBatch Batch(uint64_t seq, int collectives) {
  v1::UploadBatch b;
  b.set_batch_seq(seq);
  for (int i = 0; i < collectives; ++i) b.add_collectives()->set_seq(static_cast<uint64_t>(i));
  return b;
}

TEST(Spool, WhatIsWrittenIsReadBackInOrderUpToTheBound) {
  const std::string path = TempPath("bound");
  v1::Identity id;
  id.set_rank(3);
  id.set_session_id("s1");
  auto w = SpoolWriter::Create(path, id, 600);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_TRUE(w.value()->Append(Batch(0, 10)));
  EXPECT_TRUE(w.value()->Append(Batch(1, 10)));
  EXPECT_FALSE(w.value()->Append(Batch(2, 200)));  // past 600 bytes: refused, and full after
  EXPECT_TRUE(w.value()->full());
  EXPECT_FALSE(w.value()->Append(Batch(3, 1)));
  w.value().reset();

  const Result<SpoolContents> back = ReadSpool(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->identity.rank(), 3);
  ASSERT_EQ(back->batches.size(), 2u);
  EXPECT_EQ(back->batches[1].batch_seq(), 1u);
  EXPECT_EQ(back->batches[1].collectives_size(), 10);
  EXPECT_TRUE(back->problem.empty());
  unlink(path.c_str());
}

TEST(Spool, ACutOrForeignFileIsSaidNotTrusted) {
  const std::string path = TempPath("cut");
  v1::Identity id;
  id.set_rank(1);
  auto w = SpoolWriter::Create(path, id);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w.value()->Append(Batch(0, 5)));
  ASSERT_TRUE(w.value()->Append(Batch(1, 5)));
  w.value().reset();
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 3);
  const Result<SpoolContents> cut = ReadSpool(path);
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->batches.size(), 1u);  // the whole first batch, not the cut second one
  EXPECT_NE(cut->problem.find("cut short"), std::string::npos) << cut->problem;

  std::ofstream(path, std::ios::binary | std::ios::trunc) << "hello";
  const Result<SpoolContents> foreign = ReadSpool(path);
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.status().message().find("not a rankscope spool"), std::string::npos);
  unlink(path.c_str());
  EXPECT_FALSE(ReadSpool(path).ok());  // gone
}

}  // namespace
}  // namespace rankscope
