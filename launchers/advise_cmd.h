// `rankscope advise [QUESTION...] [--session DIR [--rank R]] [--json]`: the "pick your tool"
// planner (coordinator/advise). Without a question, the whole catalogue by level; with a session,
// the commands name the job's rank, node, kernel and launcher.
#pragma once

#include <string>
#include <vector>

namespace rankscope {

struct AdviseOptions {
  std::vector<std::string> question;  // words; empty: the catalogue
  std::string session_dir;            // optional
  int rank = -1;                      // with a session: the rank to fill in (else the worst's)
  bool json = false;
};

// 0 answered, 1 the session could not be read or has no rank R, 3 no question matched.
int RunAdvise(const AdviseOptions& options);

}  // namespace rankscope
