#!/usr/bin/env python3
"""Real MPI applications (LAMMPS, HPCC from Debian; examples' mpi_train), recorded under
`rankscope run` with one rank slowed from outside the program (tests/fixtures/cpu2-real-apps,
README.md there), re-analysed: each planted rank is named as the straggler with the cause the
fault has, its what-if is within 30 % of the bare clean run measured beside the recording, and the
clean runs give no finding. The live matrix (scripts/scenario-matrix.py, docs/scenarios.md) plants
the faults anew; this replays fixed recordings, so an analysis change that loses one shows here
on every CI run, not only when the VM's noise allows.

  real_app_replay_test.py RANKSCOPE"""
import json
import statistics
import sys
import unittest

import recorded_sessions

RANKSCOPE = None
RANK_FINDINGS = {"straggler", "late_sender", "late_receiver"}


class RealAppReplay(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.matrix = recorded_sessions.real_app_matrix()
        cls.bare = {app: statistics.median(walls)
                    for app, walls in cls.matrix["bare_clean_wall_s"].items()}

    def reanalyse(self, entry):
        replay = recorded_sessions.Reanalysis(
            RANKSCOPE, f"{recorded_sessions.REAL_APPS}/{entry['session']}/session.sqlite")
        self.addCleanup(replay.close)
        return replay.report

    def test_clean_runs_give_no_finding(self):
        clean = [e for e in self.matrix["sessions"] if "planted_rank" not in e]
        self.assertEqual(len(clean), 3)
        for entry in clean:
            with self.subTest(entry["session"]):
                findings = self.reanalyse(entry)["findings"]
                self.assertEqual([f["kind"] for f in findings], [], entry["session"])

    def test_the_replay_of_every_recording_reproduces_it(self):
        # The blame model's replay of the run as recorded must drop no dependency and end where
        # the run ended: HPCC's polled completions, recorded without where their polling began,
        # dropped 424 dependencies of a clean 2-rank run and replayed 1.18 of its 2.07 s.
        self.assertEqual(len(self.matrix["sessions"]), 11)
        for entry in self.matrix["sessions"]:
            with self.subTest(entry["session"]):
                blame = self.reanalyse(entry)["blame"]
                self.assertEqual(blame["broken_dependencies"], 0)
                self.assertAlmostEqual(blame["replayed_span_ns"] / blame["span_ns"], 1.0, delta=0.01)

    def test_each_planted_rank_is_found_with_its_cause_and_a_what_if_near_the_bare_run(self):
        planted = [e for e in self.matrix["sessions"] if "planted_rank" in e]
        self.assertEqual(len(planted), 8)
        for entry in planted:
            with self.subTest(entry["session"]):
                report = self.reanalyse(entry)
                named = [f for f in report["findings"] if f["kind"] in RANK_FINDINGS]
                self.assertEqual([f["ranks"] for f in named], [[entry["planted_rank"]]],
                                 f"{entry['session']}: {[f['summary'] for f in named]}")
                finding = named[0]
                self.assertEqual(finding["kind"], "straggler")
                evidence = finding["evidence"]
                self.assertEqual(evidence["cause_kind"], entry["cause_kind"])
                if entry["cpu_cause"]:
                    self.assertEqual(evidence["cpu_cause"], entry["cpu_cause"])
                self.assertGreaterEqual(finding["confidence"], 0.9, finding["summary"])
                what_if_s = evidence["what_if"]["what_if_ns"] / 1e9
                ratio = what_if_s / self.bare[entry["app"]]
                self.assertTrue(0.7 <= ratio <= 1.3,
                                f"{entry['session']}: what-if {what_if_s:.2f} s is {ratio:.2f}x "
                                f"the bare clean run ({self.bare[entry['app']]:.2f} s)")
                self.assertIn(f"with rank {entry['planted_rank']} like the others about",
                              finding["summary"])

    def test_a_launch_of_seconds_before_mpi_init_hides_no_straggler(self):
        # mpirun took 2.3 s to start the ranks (cpu2-slow-launch/README.md): half the span lies
        # before MPI_Init on both ranks, and the frozen rank's gain must not lose its start-up.
        entry = recorded_sessions.slow_launch_recording()
        replay = recorded_sessions.Reanalysis(
            RANKSCOPE, f"{recorded_sessions.SLOW_LAUNCH}/{entry['session']}/session.sqlite")
        self.addCleanup(replay.close)
        report = replay.report
        named = [f for f in report["findings"] if f["kind"] in RANK_FINDINGS]
        self.assertEqual([f["ranks"] for f in named], [[entry["planted_rank"]]],
                         json.dumps(report["blame"])[:2000])
        evidence = named[0]["evidence"]
        self.assertEqual(evidence["cause_kind"], entry["cause_kind"])
        self.assertGreaterEqual(named[0]["confidence"], 0.8, named[0]["summary"])
        bare = statistics.median(entry["bare_clean_wall_s"])
        ratio = evidence["what_if"]["what_if_ns"] / 1e9 / bare
        self.assertTrue(0.7 <= ratio <= 1.3, f"what-if {ratio:.2f}x the bare clean run: "
                        + named[0]["summary"])


if __name__ == "__main__":
    RANKSCOPE = sys.argv.pop(1)
    unittest.main()
