"""The scenario library itself (tests/integration/scenarios.py): every fault is planted on the
right rank of a real LAMMPS run from outside, within a fraction of a second, and leaves nothing
behind (cgroups, competitor processes, FIFO readers). Needs lammps (scripts/install-deps.sh) and
root for the cgroup faults; skips with the reason otherwise. No rankscope binary needed."""
import glob
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenarios  # noqa: E402


def short_lammps():
    app = scenarios.apps()["lammps"]
    app.argv = ["lmp", "-in", "in.lj", "-log", "none", "-screen", "none",
                "-var", "steps", "20", "-var", "s", "0.5"]
    return app


def leftover_cgroups():
    return glob.glob("/sys/fs/cgroup/**/rankscope-fault-*", recursive=True)


class PlantFaults(unittest.TestCase):
    def setUp(self):
        self.app = short_lammps()
        why = self.app.available()
        if why:
            self.skipTest(why)

    def plant(self, name, rank=1, **params):
        fault = scenarios.make_fault(name, self.app, rank, **params)
        try:
            r = scenarios.run(self.app, fault=fault, timeout=60)
        except scenarios.Skip as e:
            self.skipTest(str(e))
        self.assertEqual(r["rc"], 0, r["stderr_tail"])
        rec = r["fault"]
        self.assertTrue(rec["planted"], rec)
        self.assertLess(rec["lag_s"], 0.5, rec)
        self.assertEqual(leftover_cgroups(), [])
        return rec

    def test_cpu_quota_throttles_the_rank(self):
        rec = self.plant("cpu_quota")
        self.assertGreater(int(rec["cpu_stat"].get("nr_throttled", 0)), 0, rec)

    def test_competitor_is_killed_after(self):
        fault = scenarios.make_fault("competitor", self.app, 2, count=1)
        r = scenarios.run(self.app, fault=fault, timeout=60)
        self.assertTrue(r["fault"]["planted"], r["fault"])
        pids = r["fault"]["competitor_pids"]
        self.assertEqual(len(pids), 1)
        self.assertEqual([p for p in pids if os.path.exists(f"/proc/{p}")], [])

    def test_slow_storage_drains_the_ranks_file(self):
        rec = self.plant("slow_storage", rank=3, rate=2_000_000)
        self.assertGreater(rec["drained_bytes"], 10_000, rec)

    def test_freeze_cycles(self):
        rec = self.plant("freeze", frozen_ms=20, period_ms=100)
        self.assertGreater(rec["cycles"], 3, rec)

    def test_rank_process_found_by_environment(self):
        # The planted pid has the rank's OMPI_COMM_WORLD_RANK and libmpi (not mpirun).
        rec = self.plant("competitor", rank=3, count=1)
        self.assertEqual(len(rec["pids"]), 1, rec)
        self.assertEqual([os.path.basename(e) for e in rec["exe"]], ["lmp"], rec)


if __name__ == "__main__":
    unittest.main()
