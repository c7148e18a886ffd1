#include "coordinator/pipeline.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <system_error>

#include "coordinator/advise/advisor.h"
#include "coordinator/aligner.h"
#include "coordinator/analysis/diagnosis.h"
#include "coordinator/analysis/kernel_reports.h"
#include "coordinator/attempts.h"
#include "coordinator/collective_matcher.h"
#include "coordinator/completeness.h"
#include "coordinator/nccl_instances.h"
#include "coordinator/report/report_html.h"
#include "coordinator/report/session_store.h"
#include "coordinator/report/session_writer.h"
#include "coordinator/report/stored_windows.h"
#include "coordinator/windows.h"

namespace rankscope {

namespace {

// The messages whose two calls `held` holds, their record indices made positions among the
// held calls (StoredWindows::Hold): the others were drawn by no writer.
std::vector<P2PMessage> HeldMessages(const Session& session, const std::vector<MessageLink>& all,
                                     const std::vector<std::vector<size_t>>& held) {
  std::map<int, const std::vector<size_t>*> of_rank;
  for (size_t r = 0; r < session.ranks.size(); ++r) of_rank[session.ranks[r].id.rank] = &held[r];
  auto position = [&](int rank, size_t record) -> std::optional<size_t> {
    auto it = of_rank.find(rank);
    if (it == of_rank.end()) return std::nullopt;
    const std::vector<size_t>& indices = *it->second;
    auto at = std::lower_bound(indices.begin(), indices.end(), record);
    if (at == indices.end() || *at != record) return std::nullopt;
    return static_cast<size_t>(at - indices.begin());
  };
  std::vector<P2PMessage> out;
  for (const MessageLink& m : all) {
    const std::optional<size_t> send = position(m.sender, m.send_record);
    const std::optional<size_t> receive = position(m.receiver, m.receive_record);
    if (!send || !receive) continue;
    out.push_back(MessageOf(m));
    out.back().send_record = *send;
    out.back().receive_record = *receive;
  }
  return out;
}

// Matching, analyses and writers: the part a saved session goes through again. With `stored`
// (the file `aligned` was loaded from without its MPI records, read window by window), the
// folds read their windows from it, the writers its facts, and only the records trace.json and
// report.html show are held; session.sqlite copies the rest from it.
Result<PipelineOutput> DiagnoseAndWrite(Session aligned, const std::string& out_dir,
                                        const AnalysisOptions& options, const OutputOptions& output,
                                        StoredWindows* stored = nullptr,
                                        const std::string& stored_path = "") {
  // torchrun restarts: the last attempt is analysed, the earlier ones are kept beside it.
  SeparateAttempts(&aligned);
  std::vector<std::string> notes;
  if (std::string attempts = DescribeAttempts(aligned); !attempts.empty()) {
    notes.push_back(std::move(attempts));
  }
  std::optional<WindowedReading> windowed;
  SessionMatches matches;
  Status second_pass;
  std::optional<WindowPlan> plan;
  if (stored != nullptr) {
    Result<WindowPlan> planned = stored->Plan(options.by_window.value_or(WindowOptions{}));
    if (!planned.ok()) return planned.status();
    plan = std::move(planned).value();
    windowed.emplace(aligned);
    Result<std::vector<StoredWindows::RowCounts>> counts = stored->CountRows();
    if (!counts.ok()) return counts.status();
    std::vector<size_t> records, p2p;
    for (const StoredWindows::RowCounts& c : counts.value()) {
      records.push_back(c.collectives + c.p2p + c.mpi_calls);
      p2p.push_back(c.p2p);
    }
    windowed->blame.Reserve(records, p2p);
    // Every window of the file again, each to `add` (its index, its uploads); a read error is
    // kept for the caller in second_pass.
    auto read_again = [&](const std::function<void(size_t, const std::vector<RankUpload>&)>& add) {
      stored->Rewind();
      for (size_t w = 0; w < plan->size() && second_pass.ok(); ++w) {
        Result<std::vector<RankUpload>> uploads = stored->Next(*plan);
        if (!uploads.ok()) {
          second_pass = uploads.status();
          break;
        }
        add(w, uploads.value());
      }
    };
    // The whole blame graph, where its segments do not suffice, in another pass over the file.
    windowed->whole_blame = [&, read_again, records, p2p](const SessionMatches& read,
                                                          const BlameOptions& blame_options) {
      BlameEventFold fold(aligned);
      fold.Reserve(records, p2p);
      read_again([&](size_t, const std::vector<RankUpload>& uploads) { fold.Add(uploads); });
      return fold.Finish(aligned, read, blame_options);
    };
    // The gaps before late calls, of the flagged ranks only, in a second pass over the file.
    windowed->late_gaps_of = [&, read_again](const std::set<int>& ranks) {
      LateGapFold fold(options.straggler, ranks);
      read_again([&](size_t w, const std::vector<RankUpload>& uploads) {
        fold.Add(uploads, w + 1 == plan->size());
      });
      return fold.Take();
    };
    Result<SessionMatches> read = MatchWindows(
        aligned, options, plan->size(), [&] { return stored->Next(*plan); }, &*windowed);
    if (!read.ok()) return read.status();
    matches = std::move(read).value();
  } else if (options.by_window) {
    windowed.emplace(aligned);
    matches = MatchSessionByWindow(aligned, options, &*windowed);
    // What trace.json's arrows read of them (the records are all here).
    for (const MessageLink& link : matches.links) matches.messages.push_back(MessageOf(link));
  } else {
    matches = MatchSession(aligned);
  }
  BlameModel blame;
  std::vector<Finding> findings =
      Diagnose(aligned, matches, options, &notes, &blame, windowed ? &*windowed : nullptr);
  if (!second_pass.ok()) return second_pass;
  JoinKernelReports(SessionKernelReports(aligned), &findings);
  windowed.reset();  // the folds' state (the blame graph's events among it): read by no writer
  std::error_code absolute_error;
  const std::filesystem::path dir = std::filesystem::absolute(out_dir, absolute_error);
  PlanNextSteps(aligned, absolute_error ? out_dir : dir.lexically_normal().string(), &findings);
  for (std::string& n : notes) {
    // A re-analysis of a saved session may arrive at a note it already carries.
    if (std::find(aligned.analysis_notes.begin(), aligned.analysis_notes.end(), n) ==
        aligned.analysis_notes.end()) {
      aligned.analysis_notes.push_back(std::move(n));
    }
  }
  RecordFacts facts;
  std::optional<TraceWindow> window;
  SaveOptions save;
  if (stored != nullptr) {
    Result<RecordFacts> read = stored->Facts();
    if (!read.ok()) return read.status();
    facts = std::move(read).value();
    Status events_read;
    window = ChooseTraceWindow(aligned, matches, output.max_trace_events, facts,
                               [&](const TraceEventFn& fn) {
                                 if (events_read.ok()) events_read = stored->ForEachEvent(fn);
                               });
    if (!events_read.ok()) return events_read;
    // What the writers draw: the trace's window (everything when it has none) and the page's
    // timeline.
    std::optional<StoredWindows::Spans> spans;
    if (window) {
      spans = KeptIntervals(*window);
      if (auto timeline = TimelineSpan(aligned, facts, matches.collectives)) {
        spans->push_back(*timeline);
        *spans = MergeIntervals(std::move(*spans));
      }
    }
    std::vector<std::vector<size_t>> held_p2p;
    if (Status s = stored->Hold(spans, &aligned, &held_p2p); !s.ok()) return s;
    matches.messages = HeldMessages(aligned, matches.links, held_p2p);
    save.records_from = stored_path;
  } else {
    facts = GatherRecordFacts(aligned);
    window = ChooseTraceWindow(aligned, matches, output.max_trace_events, facts, EventsOf(aligned));
  }
  if (window) aligned.analysis_notes.push_back(DescribeTraceWindow(*window));
  PipelineOutput out;
  if (Status s = WriteSessionFolder(out_dir, aligned, matches, findings, &out.report_text,
                                    &out.report_text_color, window, &blame, &facts, save);
      !s.ok()) {
    if (out.report_text.empty()) return s;  // no folder at all
    out.write_error = s.message();
  }
  out.findings = static_cast<int>(findings.size());
  return out;
}

// A saved session made ready to be analysed again: the last attempt apart, aligned (a session
// rebuilt from spools is not), and without the notes of an earlier trace window, which are the
// writer's and are recomputed.
void PrepareStored(Session* stored) {
  SeparateAttempts(stored);
  if (!stored->aligned) {
    AssessCompleteness(stored);
    *stored = AlignSession(std::move(*stored));
  }
  std::erase_if(stored->analysis_notes,
                [](const std::string& n) { return n.rfind("trace.json holds ", 0) == 0; });
}

}  // namespace

Result<PipelineOutput> ReanalyzeAndWrite(Session stored, const std::string& out_dir,
                                         const AnalysisOptions& options,
                                         const OutputOptions& output) {
  PrepareStored(&stored);
  return DiagnoseAndWrite(std::move(stored), out_dir, options, output);
}

Result<PipelineOutput> ReanalyzeStored(const std::string& path, const std::string& out_dir,
                                       const AnalysisOptions& options,
                                       const OutputOptions& output) {
  Result<int> version = SessionSchemaVersion(path);
  if (!version.ok()) return version.status();
  Result<Session> loaded = LoadSession(path, {.mpi_records = false});
  if (!loaded.ok()) return loaded.status();
  // Read whole: older layouts; records in the ranks' clocks (the copy into the new file would not
  // align them); GPU activity (the GPU report reads every NCCL call's launch, which the facts do
  // not carry yet); earlier torchrun attempts (their counts are not in the facts yet).
  const bool gpu = std::any_of(loaded->ranks.begin(), loaded->ranks.end(),
                               [](const RankData& r) { return !r.gpu.empty(); });
  if (version.value() != kSessionStoreSchemaVersion || !loaded->aligned || gpu ||
      !loaded->earlier_attempts.empty()) {
    Result<Session> whole = LoadSession(path);
    if (!whole.ok()) return whole.status();
    return ReanalyzeAndWrite(std::move(whole).value(), out_dir, options, output);
  }
  Session session = std::move(loaded).value();
  PrepareStored(&session);
  Result<std::unique_ptr<StoredWindows>> stored = StoredWindows::Open(path, session);
  if (!stored.ok()) return stored.status();
  return DiagnoseAndWrite(std::move(session), out_dir, options, output, stored->get(), path);
}

Result<PipelineOutput> AnalyzeAndWrite(Session raw, const std::string& out_dir,
                                       const AnalysisOptions& options,
                                       const OutputOptions& output) {
  SeparateAttempts(&raw);  // a torchrun restart's failed attempt does not make the run partial
  AssessCompleteness(&raw);
  Session aligned = AlignSession(std::move(raw));
  const NcclJoinStats nccl = AddNcclCollectives(&aligned);
  if (nccl.calls_without_kernel > 0 || nccl.kernels_without_call > 0) {
    aligned.analysis_notes.push_back(
        "NCCL: " + std::to_string(nccl.joined) + " calls joined with their GPU kernels; " +
        std::to_string(nccl.calls_without_kernel) + " calls had no kernel and " +
        std::to_string(nccl.kernels_without_call) +
        " NCCL kernels no call (capture window, or a log line NCCL did not write)");
  }
  if (nccl.windowed_ranks > 0) {
    aligned.analysis_notes.push_back(
        "NCCL: " + std::to_string(nccl.windowed_ranks) +
        " rank(s) captured GPU activity in windows (RANKSCOPE_CAPTURE_*), so their NCCL calls "
        "were not joined with kernels: NCCL's log does not time calls, and only a whole-run "
        "capture lines calls and kernels up. Their kernels are in trace.json; MPI collectives "
        "are analysed as usual.");
  }
  return DiagnoseAndWrite(std::move(aligned), out_dir, options, output);
}

Result<PipelineOutput> AnalyzeAndWrite(Session raw, const RecordSpill& spill,
                                       const std::string& out_dir, const AnalysisOptions& options,
                                       const OutputOptions& output) {
  SeparateAttempts(&raw);
  bool windowed = raw.earlier_attempts.empty();
  std::set<std::pair<int, int>> identities;  // (restart count, rank): how the file is read
  for (const RankData& r : raw.ranks) {
    if (!r.gpu.empty() || r.nccl || !r.collectives.empty() || !r.p2p.empty() ||
        !r.mpi_calls.empty() || !r.ranges.empty() ||
        !identities.emplace(r.id.restart_count, r.id.rank).second) {
      windowed = false;
    }
  }
  Session outline;  // a copy without records, should the file not read as one of this session
  if (windowed) {
    outline = raw;
    AssessCompleteness(&raw);
    Session aligned = AlignSession(std::move(raw));
    Result<std::unique_ptr<StoredWindows>> stored = StoredWindows::Open(spill.path(), aligned);
    if (stored.ok()) {
      return DiagnoseAndWrite(std::move(aligned), out_dir, options, output, stored->get(),
                              spill.path());
    }
    raw = std::move(outline);
  }
  if (Status s = LoadSpilledRecords(spill.path(), &raw); !s.ok()) {
    raw.partial_reasons.push_back(
        "the MPI records kept on disk during the run could not be "
        "read back (" +
        s.message() + "); analysed without them");
    raw.partial = true;
  }
  return AnalyzeAndWrite(std::move(raw), out_dir, options, output);
}

}  // namespace rankscope
