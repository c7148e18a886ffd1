#include "launchers/advise_cmd.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "coordinator/advise/advisor.h"
#include "coordinator/analysis/diagnosis.h"
#include "coordinator/report/session_store.h"

namespace rankscope {
namespace {

void PrintAnswer(const Answer& a) {
  std::printf("[%s] %s   (rankscope advise %s)\n", a.level.c_str(), a.question.c_str(),
              a.id.c_str());
  for (size_t i = 0; i < a.steps.size(); ++i) {
    const AdviceStep& s = a.steps[i];
    std::printf("  %zu. %s%s\n     $ %s\n     look for: %s\n", i + 1, s.tool.c_str(),
                i == 0 ? "" : "  (if the step above does not answer it)", s.command.c_str(),
                s.look_for.c_str());
  }
}

nlohmann::json ToJson(const Answer& a) {
  nlohmann::json steps = nlohmann::json::array();
  for (const AdviceStep& s : a.steps) {
    steps.push_back({{"tool", s.tool}, {"command", s.command}, {"look_for", s.look_for}});
  }
  return {{"id", a.id}, {"level", a.level}, {"question", a.question}, {"steps", steps}};
}

}  // namespace

int RunAdvise(const AdviseOptions& options) {
  Session session;
  AdviceFacts facts;
  if (!options.session_dir.empty()) {
    Result<Session> loaded = LoadSession(options.session_dir + "/session.sqlite");
    if (!loaded.ok()) {
      std::fprintf(stderr, "rankscope advise: %s\n", loaded.status().message().c_str());
      return 1;
    }
    session = std::move(loaded).value();
    const std::vector<Finding> findings = Diagnose(session, AnalysisOptions{});
    facts = FactsOf(session, findings);
    if (options.rank >= 0) {
      // The rank a finding's next steps name: its facts, and the finding about it if any.
      if (session.FindRank(options.rank) == nullptr) {
        std::fprintf(stderr, "rankscope advise: %s has no rank %d\n", options.session_dir.c_str(),
                     options.rank);
        return 1;
      }
      Finding chosen;
      chosen.other_kind = "chosen with --rank";
      for (const Finding& f : findings) {
        if (std::find(f.ranks.begin(), f.ranks.end(), options.rank) != f.ranks.end()) {
          chosen.kind = f.kind;
          break;
        }
      }
      chosen.ranks = {options.rank};
      facts = FactsOf(session, {chosen});
    }
  }
  std::string question;
  for (const std::string& w : options.question) question += (question.empty() ? "" : " ") + w;
  const std::vector<Answer> answers =
      question.empty() ? Catalogue(facts) : Ask(question, facts, /*most=*/2);
  if (answers.empty()) {
    std::fprintf(stderr,
                 "rankscope advise: no question in the catalogue matches \"%s\"; "
                 "`rankscope advise` lists them all\n",
                 question.c_str());
    return 3;
  }
  if (options.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const Answer& a : answers) out.push_back(ToJson(a));
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  if (!facts.why.empty()) {
    std::printf("For this session: looking at %s on node %s.\n\n", facts.why.c_str(),
                facts.node.c_str());
  }
  for (size_t i = 0; i < answers.size(); ++i) {
    if (i > 0) std::printf("\n");
    PrintAnswer(answers[i]);
  }
  return 0;
}

}  // namespace rankscope
