// Hand-built sessions shared by the report tests, and a field-by-field session comparison.
#pragma once

#include <string>
#include <vector>

#include "coordinator/findings.h"
#include "coordinator/session.h"

namespace rankscope::report_test {

// 3 ranks on 2 nodes (ranks 0, 1 on node-a; rank 2 on node-b), aligned, partial: rank 2 is a
// straggler (2 ms late at every allreduce) and was killed by SIGKILL before its final batch,
// so allreduce seq 3 and the bcast are incomplete. Rank 0 has an NVTX start/end range "io"
// that partially overlaps its first allreduce. Times start at 1000 s.
Session MakeSession();

// Two findings, deliberately not worst first: an info dataloader_skew, then a critical
// straggler on rank 2.
std::vector<Finding> MakeFindings();

// MakeSession with markup injected into every kind of string the reports show.
inline constexpr char kInjected[] = "<script>alert(1)</script>";
Session MakeHostileSession();
std::vector<Finding> MakeHostileFindings();

// A clean 4-rank run: 50 allreduce instances, everyone on time, no findings expected.
Session MakeCleanSession();

// One rank with CUPTI activity: a launch on thread 100 and the kernel it launched on stream 13
// of GPU 0, a copy, and an NCCL all-reduce whose kernel runs on stream 14.
Session MakeGpuSession();

// EXPECTs that every field of every rank and record is equal.
void ExpectSessionsEqual(const Session& expected, const Session& actual);

// A fresh empty directory under the test temp dir.
std::string MakeTempDir(const std::string& name);

}  // namespace rankscope::report_test
