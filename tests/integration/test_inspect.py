"""`rankscope inspect nccl-log|topo|ncu` on the real NCCL logs and topology dump from 2xH200 and
the Nsight Compute output from one H200."""
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import RANKSCOPE, RankscopeTest  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                        "h200x2-torch-allreduce")
RANK0 = os.path.join(FIXTURES, "nccl.vm.747.log")
RANK1 = os.path.join(FIXTURES, "nccl.vm.748.log")
TOPO = os.path.join(FIXTURES, "topo.xml")
NCU = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "h200-ncu")


def inspect(*args):
    return subprocess.run([RANKSCOPE, "inspect", *args], capture_output=True, text=True,
                          timeout=60)


class Inspect(RankscopeTest):
    def test_nccl_logs_json_contract(self):
        proc = inspect("nccl-log", "--json", RANK0, RANK1)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        out = json.loads(proc.stdout)
        self.assertGreater(out["skipped_lines"], 0)
        comms = out["communicators"]
        self.assertEqual([(c["comm_id"], c["rank"], c["nranks"]) for c in comms],
                         [("0x1e900aa5c8e42401", 0, 2), ("0x1e900aa5c8e42401", 1, 2)])
        for c in comms:
            self.assertEqual(c["nnodes"], 1)
            self.assertEqual(c["channels"], 24)
            self.assertEqual({t["kind"] for t in c["transports"]}, {"P2P/CUMEM"})
            self.assertEqual({t["peer"] for t in c["transports"]}, {1 - c["rank"]})
        colls = out["collectives"]
        self.assertEqual(len(colls), 10)
        for c in colls:
            self.assertEqual((c["op"], c["count"], c["datatype"], c["bytes"]),
                             ("AllReduce", 67108864, "ncclFloat32", 268435456))
            # Rank 1's log has no tuning lines: taken from rank 0's same (comm_id, seq).
            self.assertEqual((c["algo"], c["proto"]), ("RING", "SIMPLE"))
        self.assertEqual(sorted(c["seq"] for c in colls), [0, 0, 1, 1, 2, 2, 3, 3, 4, 4])
        self.assertEqual({c.get("tuning_from") for c in colls if c["file"] == RANK1}, {RANK0})

    def test_nccl_log_text_and_bad_files(self):
        proc = inspect("nccl-log", RANK0, RANK1)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("5 x AllReduce 256.0 MiB ncclFloat32", proc.stdout)
        self.assertIn("5 call(s) seen on every rank", proc.stdout)
        missing = os.path.join(self.tmp, "nope.log")
        proc = inspect("nccl-log", missing, RANK0)
        self.assertEqual(proc.returncode, 1)
        self.assertIn(missing, proc.stderr)
        self.assertIn("AllReduce", proc.stdout)  # the readable file is still shown
        # A log cut mid-line and garbage lines: parsed as far as it goes, never fatal.
        cut = os.path.join(self.tmp, "cut.log")
        with open(RANK0, "rb") as f:
            data = f.read()
        with open(cut, "wb") as f:
            f.write(b"\x00\xffgarbage line\n" + data[: len(data) * 2 // 3])
        proc = inspect("nccl-log", "--json", cut)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        out = json.loads(proc.stdout)
        self.assertTrue(out["files"][0]["truncated_last_line"])
        self.assertEqual(out["communicators"][0]["comm_id"], "0x1e900aa5c8e42401")

    def test_topology(self):
        proc = inspect("topo", "--json", TOPO)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        topo = json.loads(proc.stdout)
        self.assertEqual(len(topo["gpus"]), 2)
        self.assertTrue(topo["all_gpus_nvlink_connected"])
        self.assertEqual([g["sm"] for g in topo["gpus"]], [90, 90])
        self.assertEqual(topo["gpus"][0]["nvlinks"][0]["count"], 18)
        self.assertIsNone(topo["gpus"][0]["pcie_link"]["width"])  # not in the dump: unknown, not 0
        self.assertEqual(topo["nics"][0]["name"], "eth0")
        text = inspect("topo", TOPO)
        self.assertIn("18 to NVSwitch", text.stdout)
        cut = os.path.join(self.tmp, "cut.xml")
        with open(TOPO) as f:
            xml = f.read()
        with open(cut, "w") as f:
            f.write(xml[: len(xml) // 2])
        proc = inspect("topo", cut)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("cut.xml", proc.stderr)
        self.assertIn("truncated", proc.stderr)

    def test_ncu_kernels_json_and_bad_files(self):
        gemm_gelu = os.path.join(NCU, "torch_gemm_gelu.raw.csv")
        light = os.path.join(NCU, "light_kernel.raw.csv")
        proc = inspect("ncu", "--json", gemm_gelu, light)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        kernels = json.loads(proc.stdout)["kernels"]
        self.assertEqual([(k["file"], k["id"], k["bound"]) for k in kernels],
                         [(gemm_gelu, 0, "compute-bound"), (gemm_gelu, 1, "memory-bound"),
                          (light, 0, "latency-bound"), (light, 1, "latency-bound")])
        self.assertEqual(kernels[0]["roofline"]["precision"], "tensor")
        self.assertEqual(kernels[2]["stalls"][0]["reason"], "long_scoreboard")
        page = os.path.join(self.tmp, "kernels.html")
        text = inspect("ncu", "--html", page, os.path.join(NCU, "heavy_stencil.raw.csv"))
        self.assertEqual(text.returncode, 0, text.stderr)
        with open(page) as f:
            html = f.read()
        self.assertIn("<svg", html)
        self.assertIn(">heavy_stencil #0<", html)
        self.assertNotIn("<script", html)
        self.assertIn("compute-bound", text.stdout)
        self.assertIn("fp32 compute roof", text.stdout)
        # A file cut inside its first launch's row: named, with the line, exit 1; the other
        # file's launches still shown.
        cut = os.path.join(self.tmp, "cut.csv")
        with open(light, "rb") as f:
            data = f.read()
        with open(cut, "wb") as f:
            f.write(data[: len(data) * 2 // 3])
        proc = inspect("ncu", cut, os.path.join(NCU, "heavy_stencil.raw.csv"))
        self.assertEqual(proc.returncode, 1)
        self.assertIn("cut.csv:", proc.stderr)
        self.assertIn("heavy_stencil", proc.stdout)
        # Another CSV (ncu's details page), and an .ncu-rep without ncu on PATH.
        details = os.path.join(self.tmp, "details.csv")
        with open(details, "w") as f:
            f.write('"ID","Section Name","Metric Name","Metric Value"\n"0","SOL","x","1"\n')
        proc = inspect("ncu", details)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("--page raw", proc.stderr)
        rep = os.path.join(self.tmp, "r.ncu-rep")
        with open(rep, "wb") as f:
            f.write(b"\0")
        proc = subprocess.run([RANKSCOPE, "inspect", "ncu", rep], capture_output=True, text=True,
                              timeout=60, env={**os.environ, "PATH": "/nonexistent"})
        self.assertEqual(proc.returncode, 1)
        self.assertIn("ncu on PATH", proc.stderr)

    def test_ncu_rep_goes_through_ncu_import(self):
        """An .ncu-rep is read by `ncu --import FILE --csv --page raw`; ncu cannot run here, so a
        stand-in on PATH prints the real H200 raw page for the file it is given (odd characters in
        the name included) and fails for another."""
        bin_dir = os.path.join(self.tmp, "bin")
        os.mkdir(bin_dir)
        rep = os.path.join(self.tmp, "rank 1's kernel.ncu-rep")
        with open(rep, "wb") as f:
            f.write(b"\0")
        fake = os.path.join(bin_dir, "ncu")
        with open(fake, "w") as f:
            f.write('#!/bin/sh\n[ $# = 5 ] && [ "$1 $3 $4 $5" = "--import --csv --page raw" ] || exit 2\n'
                    '[ "$2" = "%s" ] || { echo "==ERROR== no such report" >&2; exit 3; }\n'
                    'cat "%s"\n' % (rep, os.path.join(NCU, "heavy_stencil.raw.csv")))
        os.chmod(fake, 0o755)
        env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ["PATH"]}
        proc = subprocess.run([RANKSCOPE, "inspect", "ncu", "--json", rep], capture_output=True,
                              text=True, timeout=60, env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        kernels = json.loads(proc.stdout)["kernels"]
        self.assertEqual([(k["file"], k["bound"]) for k in kernels], [(rep, "compute-bound")])
        other = os.path.join(self.tmp, "other.ncu-rep")
        proc = subprocess.run([RANKSCOPE, "inspect", "ncu", other], capture_output=True,
                              text=True, timeout=60, env=env)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("no such report", proc.stderr)  # ncu's own message, passed through
        self.assertIn("failed (exit 3)", proc.stderr)


class NcclReplay(RankscopeTest):
    """The agent's NCCL path end to end on CPU, fed by real logs recorded on 2xH200."""

    def test_agents_read_nccl_logs_and_topology_into_the_report(self):
        replay = os.path.join(os.path.dirname(os.path.abspath(__file__)), "replay_nccl.py")
        proc, out = self.run_rankscope(
            ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", "python3", replay])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(os.path.join(out, "report.json")) as f:
            report = json.load(f)
        comm = report["nccl"]["communicators"][0]
        self.assertEqual(report["nccl"]["version"], "2.28.9+cuda13.0")
        self.assertEqual(comm["comm_id"], "0x1e900aa5c8e42401")
        self.assertEqual(comm["ranks_reporting"], [0, 1])
        self.assertEqual((comm["calls"], comm["calls_on_every_rank"]), (5, 5))
        self.assertEqual(comm["transports"], {"P2P/CUMEM": 48})
        self.assertEqual([(s["op"], s["bytes"], s["algo"], s["proto"], s["calls"])
                          for s in comm["shapes"]],
                         [("AllReduce", 268435456, "RING", "SIMPLE", 5)])
        # Local rank 0 was asked for the topology dump; one node, two NVLinked H200s.
        self.assertEqual(len(report["topology"]), 1)
        topo = report["topology"][0]["topology"]
        self.assertEqual([g["sm"] for g in topo["gpus"]], [90, 90])
        self.assertTrue(topo["all_gpus_nvlink_connected"])
        self.assertIn("comm 0x1e900aa5c8e42401", proc.stderr)
        # The agents removed their private NCCL files.
        self.assertEqual([d for d in os.listdir("/tmp") if d.startswith("rankscope-nccl.")
                          and os.path.getmtime(os.path.join("/tmp", d)) > self.started], [])

    def setUp(self):
        super().setUp()
        import time
        self.started = time.time()


if __name__ == "__main__":
    unittest.main()
