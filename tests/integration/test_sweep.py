"""`rankscope sweep` on the real 4-node SLURM cluster (scripts/slurm-cluster.sh, started by the
CTest fixture `slurm`). Faults are planted for real, one node at a time: every slurmd runs in a
mount namespace of its own, so a full tmpfs mounted in n3's namespace is a full scratch file
system on n3 only, and an empty tmpfs over the build's bin/ in n2's is a node without the
rankscope binary."""
import json
import os
import subprocess
import sys
import time
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BUILD, RANKSCOPE, RankscopeTest, mpi_env  # noqa: E402
from test_report_html import CHROMIUM, console_lines, render  # noqa: E402

# The testbed's thresholds (see the file): no peer comparison of figures that only show how
# four "nodes" on one 2-core host were scheduled.
TESTBED_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sweep_testbed.json")
SLURM_DIR = os.path.dirname(os.environ.get("SLURM_CONF", "/nonexistent/slurm.conf"))


def in_node(node, *argv):
    """Runs argv in `node`'s slurmd mount namespace."""
    with open(os.path.join(SLURM_DIR, f"slurmd.{node}.pid")) as f:
        pid = f.read().strip()
    subprocess.run(["nsenter", "--mount", "--target", pid] + list(argv), check=True)


def sized_scratch(test, nodes, size="2g"):
    """Mounts a tmpfs of `size` at a folder of the test's in each of `nodes`' mount namespaces
    (None: this process's own) and returns its path, so that the fs checks see the same free
    space whatever this host's disk holds (CI machines have been seen with under 300 MiB free,
    which rightly warns). Unmounted when the test ends. Without root: the host's own scratch."""
    if os.geteuid() != 0:
        return None
    path = os.path.join(test.tmp, "scratch-" + size)
    os.makedirs(path, exist_ok=True)
    for node in nodes:
        mount = ["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", path]
        if node is None:
            subprocess.run(mount, check=True)
            test.addCleanup(subprocess.run, ["umount", path])
        else:
            in_node(node, *mount)
            test.addCleanup(in_node, node, "umount", path)
    return path


def node_summaries(report):
    return "\n".join(f"{n['node']}: {n['status']}: {n.get('summary') or n.get('problem', '')}"
                     for n in report["nodes"])


def sinfo():
    out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N|%t|%E"], env=mpi_env(),
                         capture_output=True, text=True, check=True).stdout
    return {line.split("|")[0]: line.split("|", 2)[1:] for line in out.splitlines()}


def resume(nodes):
    """Returns drained `nodes` to service and waits until every node is idle again (slurmctld
    shows a resumed node as not responding, idle*, for about a second)."""
    subprocess.run(["scontrol", "update", f"NodeName={nodes}", "State=RESUME"], env=mpi_env(),
                   capture_output=True)
    deadline = time.time() + 60
    while time.time() < deadline and any(s[0] != "idle" for s in sinfo().values()):
        time.sleep(0.5)


@unittest.skipUnless(os.environ.get("SLURM_CONF"), "needs the slurm fixture (SLURM_CONF)")
class Sweep(RankscopeTest):
    def setUp(self):
        super().setUp()
        self.scratch = sized_scratch(self, ["n1", "n2", "n3", "n4"])

    def sweep(self, *args, out="sweep", env=None):
        out = os.path.join(self.tmp, out)
        if "--baseline" not in args:
            args += ("--baseline", os.path.join(self.tmp, "history.sqlite"))
        if "--config" not in args:
            args += ("--config", TESTBED_CONFIG)
        if "--mpi" not in args:
            args += ("--mpi", "pmix")  # the testbed's slurm.conf has MpiDefault=none
        if "--scratch" not in args and self.scratch:
            args += ("--scratch", self.scratch)
        p = subprocess.run([RANKSCOPE, "sweep", "-o", out] + list(args),
                           env=dict(mpi_env(), **(env or {})), capture_output=True, text=True,
                           timeout=280)
        with open(os.path.join(out, "report.json")) as f:
            report = json.load(f)
        return p, out, report

    def test_every_node_passes_and_every_output_is_written(self):
        p, out, report = self.sweep()
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr + node_summaries(report))
        self.assertIn("4 pass, 0 warn, 0 fail", p.stdout, node_summaries(report))
        self.assertNotIn("nodes done", p.stderr)  # no progress line without a terminal
        nodes = {n["node"]: n for n in report["nodes"]}
        self.assertEqual(sorted(nodes), ["n1", "n2", "n3", "n4"])
        for n in nodes.values():
            self.assertEqual(n["status"], "pass", n)
            checks = {c["name"]: c for c in n["checks"]}
            for name in ("mem.bandwidth", "cpu.flops", "fs.free_bytes", "fs.free_ratio",
                         "clock.offset", "clock.uncertainty", "mpi.latency", "mpi.bandwidth"):
                self.assertIn(name, checks)
            self.assertGreater(checks["mem.bandwidth"]["value"], 1e8)
            # MPI over TCP on loopback: microseconds, not milliseconds; both ring neighbours.
            self.assertLess(checks["mpi.latency"]["value"], 1e-3)
            self.assertGreater(checks["mpi.bandwidth"]["value"], 1e7)
            self.assertEqual(checks["mpi.latency"]["detail"].count(" to n"), 2, checks)
            # All four "nodes" share this host's clock: the offset is what alignment leaves.
            self.assertLess(abs(checks["clock.offset"]["value"]), 1e-3, checks["clock.offset"])
        with open(os.path.join(out, "rankscope_sweep.prom")) as f:
            prom = f.read()
        for line in prom.splitlines():
            self.assertRegex(line, r'^(# (HELP|TYPE) \w+ .+|rankscope_\w+(\{[^}]*\})? [-0-9.e+]+)$')
        self.assertIn('rankscope_sweep_node_status{node="n3"} 0', prom)
        suites = ET.parse(os.path.join(out, "junit.xml")).getroot()
        self.assertEqual(len(suites), 4)
        self.assertEqual(sum(int(s.get("failures")) for s in suites), 0)
        for log in ("n1", "n2", "n3", "n4", "pair-n1-n2", "pair-n2-n3", "pair-n3-n4",
                    "pair-n4-n1"):
            self.assertTrue(os.path.exists(os.path.join(out, "nodes", log + ".log")), log)
        if CHROMIUM:  # the grid page renders and logs nothing (no script, a strict CSP)
            rc, log = render(os.path.join(out, "report.html"), os.path.join(self.tmp, "s.png"))
            self.assertEqual(rc, 0, log)
            self.assertEqual(console_lines(log), [])

    @unittest.skipUnless(os.geteuid() == 0, "plants faults with nsenter and mount (root)")
    def test_planted_faults_are_found_on_their_node_and_drained(self):
        # n3's scratch: a small tmpfs over the 2 GiB one that the other nodes see.
        scratch = self.scratch
        bin_dir = os.path.join(BUILD, "bin")
        mounted = []
        try:
            in_node("n3", "mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", scratch)
            mounted.append(("n3", scratch))
            in_node("n3", "sh", "-c", f"cat /dev/zero > {scratch}/fill 2>/dev/null; true")
            in_node("n2", "mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", bin_dir)
            mounted.append(("n2", bin_dir))
            subprocess.run(["scontrol", "update", "NodeName=n4", "State=DRAIN",
                            "Reason=admin: bad DIMM"], env=mpi_env(), check=True)
            p, out, report = self.sweep("--nodes", "n[1-4],n9", "--scratch", scratch, "--drain")
            states = sinfo()
        finally:
            for node, path in mounted:
                in_node(node, "umount", path)
            resume("n2,n3,n4")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        nodes = {n["node"]: n for n in report["nodes"]}
        self.assertEqual(list(nodes), ["n1", "n2", "n3", "n4", "n9"], node_summaries(report))
        self.assertEqual(nodes["n1"]["status"], "pass", nodes["n1"])
        # n3: the full scratch, on n3 only.
        self.assertEqual(nodes["n3"]["status"], "fail")
        failed = {c["name"] for c in nodes["n3"]["checks"] if c["status"] == "fail"}
        self.assertEqual(failed, {"fs.free_bytes", "fs.free_ratio"}, nodes["n3"])
        self.assertEqual(nodes["n3"]["summary"], f"fs.free_bytes:{scratch}: 0 B < 100.0 MiB")
        # n2: no rankscope there; n4: drained by someone else; n9: not a node.
        self.assertEqual(nodes["n2"]["status"], "fail")
        self.assertIn("execve(): " + RANKSCOPE + ": No such file or directory",
                      nodes["n2"]["problem"])
        self.assertEqual(nodes["n4"]["status"], "warn")
        self.assertEqual(nodes["n4"]["problem"],
                         "not swept: already drained (sinfo: drain: admin: bad DIMM)")
        self.assertEqual(nodes["n9"]["problem"], "unknown to SLURM (sinfo does not list it)")
        # --drain drained n3 alone, with a reason that says rankscope and why.
        self.assertEqual(states["n3"], ["drain", f"rankscope: fs.free_bytes:{scratch}: 0 B < "
                                                 "100.0 MiB"])
        self.assertEqual(states["n4"], ["drain", "admin: bad DIMM"])
        self.assertEqual(states["n2"][0], "idle")
        self.assertEqual(states["n1"][0], "idle")
        self.assertIn("n2 not drained: what failed there did not run", p.stdout)

    @unittest.skipUnless(os.geteuid() == 0, "plants a fault with nsenter and mount (root)")
    def test_a_sick_gpu_is_found_on_its_node_and_drained(self):
        # NVML is the stand-in library (agent/fake_nvml.cc): every node has two H200s,
        # and on n2 alone GPU 1 is sick: an XID 79 while watched, an uncorrected ECC error, a
        # pending row remap, a hardware slowdown, 91 C, PCIe trained down to gen 3 x8, 2 NVLinks
        # down and NVLink replays rising. The GPU limits are config/sweep.json's own.
        with open(os.path.join(os.path.dirname(TESTBED_CONFIG), "..", "..", "config",
                               "sweep.json")) as f:
            defaults = json.load(f)
        with open(TESTBED_CONFIG) as f:
            config = json.load(f)
        config["checks"].update({k: v for k, v in defaults["checks"].items()
                                 if k.startswith("gpu.")})
        config["models"] = defaults["models"]
        path = os.path.join(self.tmp, "gpu-config.json")
        with open(path, "w") as f:
            json.dump(config, f)
        fake = os.path.join(BUILD, "tests", "libfake_nvml.so")
        self.assertTrue(os.path.exists(fake), fake)
        try:
            p, out, report = self.sweep("--config", path, "--drain", env={
                "RANKSCOPE_NVML_LIBRARY": fake, "FAKE_NVML_SICK_NODE": "n2",
                "FAKE_NVML_XIDS": "1:79"})
            states = sinfo()
        finally:
            resume("n2")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        nodes = {n["node"]: n for n in report["nodes"]}
        for name in ["n1", "n3", "n4"]:
            self.assertEqual(nodes[name]["status"], "pass", node_summaries(report))
            gpu = [c for c in nodes[name]["checks"] if c["name"].startswith("gpu.")]
            self.assertEqual({c["subject"] for c in gpu}, {"gpu0", "gpu1"})
            self.assertTrue(all(c["model"] == "NVIDIA H200" for c in gpu))
        sick = {(c["name"], c["subject"]): c for c in nodes["n2"]["checks"]}
        self.assertEqual(nodes["n2"]["status"], "fail")
        xid = sick[("gpu.xid_events", "gpu1")]
        self.assertEqual((xid["value"], xid["status"], xid["detail"]), (1, "fail", "XID 79 x1"))
        self.assertEqual(sick[("gpu.xid_events", "gpu0")]["status"], "pass")
        for name, status in [("gpu.ecc_uncorrected_volatile", "fail"),
                             ("gpu.row_remap_pending", "warn"), ("gpu.clock_events", "warn"),
                             ("gpu.temperature", "fail"), ("gpu.pcie_gen_below_max", "warn"),
                             ("gpu.pcie_lanes_below_max", "fail"), ("gpu.nvlinks_down", "fail"),
                             ("gpu.nvlink_errors", "warn")]:
            self.assertEqual(sick[(name, "gpu1")]["status"], status, sick[(name, "gpu1")])
            self.assertEqual(sick[(name, "gpu0")]["status"], "pass", sick[(name, "gpu0")])
        # Drained with the first failed GPU figure; the healthy nodes untouched.
        self.assertEqual(states["n2"][0], "drain")
        self.assertTrue(states["n2"][1].startswith("rankscope: gpu."), states["n2"])
        for name in ["n1", "n3", "n4"]:
            self.assertEqual(states[name][0], "idle", states)
        # The grid folds the GPUs into one column per check and names the sick GPU.
        with open(os.path.join(out, "report.txt")) as f:
            text = f.read()
        self.assertIn("gpu.temperature", text)
        self.assertNotIn("gpu.temperature:gpu1", text.split("Problems")[0])
        self.assertIn("91 C gpu1 !!", text)
        with open(os.path.join(out, "rankscope_sweep.prom")) as f:
            prom = f.read()
        self.assertIn('rankscope_sweep_gpu_temperature_celsius{node="n2",subject="gpu1"} 91', prom)

    @unittest.skipUnless(os.geteuid() == 0, "plants a fault with nsenter and mount (root)")
    def test_a_fall_from_the_nodes_own_past_is_a_trend(self):
        # Only the history decides here: a config with a trend limit and nothing else.
        config = os.path.join(self.tmp, "trend.json")
        with open(config, "w") as f:
            json.dump({"checks": {"fs.free_bytes": {"trend_warn_below": 0.5}}}, f)
        scratch = self.scratch  # as root (the mounts need it): 2 GiB, but 64 MiB on n3
        in_node("n3", "mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", scratch)
        try:
            args = ("--config", config, "--scratch", scratch)
            for night in ("1", "2"):
                p, _, _ = self.sweep(*args, out="night" + night)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            in_node("n3", "dd", "if=/dev/zero", f"of={scratch}/fill", "bs=1M", "count=48",
                    "status=none")
            p, _, report = self.sweep(*args, out="night3")
        finally:
            in_node("n3", "umount", scratch)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        nodes = {n["node"]: n for n in report["nodes"]}
        self.assertEqual([n for n in nodes if nodes[n]["status"] != "pass"], ["n3"], p.stdout)
        check = next(c for c in nodes["n3"]["checks"]
                     if c["name"] == "fs.free_bytes" and c["subject"] == scratch)
        self.assertEqual(check["status"], "warn")
        self.assertTrue(check["trend"])
        self.assertEqual(check["past_median"], 64 * 2**20)
        self.assertRegex(check["reason"], r"^trend: 16\.0 MiB is 25% of this node's median "
                                          r"64\.0 MiB over its last 2 sweeps$")

    def test_a_broken_mpi_launch_fails_every_pair_and_drains_nothing(self):
        try:
            # No PMI for the pairs: every rankscope-pingpong is two singletons.
            p, _, report = self.sweep("--mpi", "none", "--drain")
            states = sinfo()
        finally:
            resume("n[1-4]")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        for n in report["nodes"]:
            self.assertEqual(n["status"], "fail", n)
            pingpong = next(c for c in n["checks"] if c["name"] == "mpi.pingpong")
            self.assertIn("srun exit", pingpong["error"])
        self.assertIn("every MPI pair failed: if the nodes are fine, the MPI launch is not", p.stdout)
        self.assertEqual({s[0] for s in states.values()}, {"idle"}, states)

    def test_progress_on_a_terminal_names_the_current_check(self):
        # script(1) gives the sweep a pseudo-terminal.
        log = os.path.join(self.tmp, "typescript")
        command = (f"{RANKSCOPE} sweep -o {self.tmp}/tty --no-history --mpi pmix "
                   f"--config {TESTBED_CONFIG} --nodes n[1-2] --level standard")
        subprocess.run(["script", "-qc", command, log], env=mpi_env(), capture_output=True,
                       timeout=200)
        with open(log, errors="replace") as f:
            screen = f.read().replace("\r", "\n")
        self.assertRegex(screen, r"rankscope sweep: 0/2 nodes done, \d+ s; n[12]: "
                                 r"(mem\.bandwidth|cpu\.flops)")
        self.assertIn("rankscope sweep: 2/2 nodes done", screen)
        self.assertIn("rankscope sweep: 1/1 pairs done", screen)

    def test_a_corrupt_history_is_named_and_the_sweep_goes_on(self):
        history = os.path.join(self.tmp, "broken.sqlite")
        garbage = b"not an sqlite file " * 10
        with open(history, "wb") as f:
            f.write(garbage)
        p, _, report = self.sweep("--baseline", history, "--nodes", "n[1-2]")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn(f"note: history {history}: file is not a database; this sweep is neither "
                      "compared with the past nor recorded", p.stdout)
        self.assertEqual([n["status"] for n in report["nodes"]], ["pass", "pass"],
                         node_summaries(report))
        with open(history, "rb") as f:
            self.assertEqual(f.read(), garbage)  # left as it was

    def test_bad_input_is_refused_before_anything_runs(self):
        p = subprocess.run([RANKSCOPE, "sweep", "--level", "nightly"], env=mpi_env(),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown level 'nightly'", p.stderr)
        bad = os.path.join(self.tmp, "bad.json")
        with open(bad, "w") as f:
            f.write('{"checks": {"mem.bandwidth": {"peer_warn_bellow": 0.8}}}')
        p = subprocess.run([RANKSCOPE, "sweep", "--config", bad], env=mpi_env(),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn(f"{bad}: checks.mem.bandwidth: unknown key 'peer_warn_bellow'", p.stderr)
        p = subprocess.run([RANKSCOPE, "sweep", "--partition", "nosuch"], env=mpi_env(),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("no nodes to sweep in partition nosuch", p.stderr)


class SweepWithoutSlurm(RankscopeTest):
    def test_a_hostfile_sweeps_through_mpirun(self):
        hosts = os.path.join(self.tmp, "hosts")
        with open(hosts, "w") as f:
            f.write("# this machine, and one that does not exist\nlocalhost slots=4\nnosuchhost\n")
        env = mpi_env()
        env.pop("SLURM_CONF", None)
        out = os.path.join(self.tmp, "sweep")
        scratch = sized_scratch(self, [None])
        p = subprocess.run([RANKSCOPE, "sweep", "--hostfile", hosts, "-o", out, "--no-history"]
                           + (["--scratch", scratch] if scratch else []),
                           env=env, capture_output=True, text=True, timeout=200)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        with open(os.path.join(out, "report.json")) as f:
            nodes = {n["node"]: n for n in json.load(f)["nodes"]}
        self.assertEqual(list(nodes), ["localhost", "nosuchhost"])
        self.assertEqual(nodes["localhost"]["status"], "pass", nodes["localhost"])
        self.assertEqual(len(nodes["localhost"]["checks"]), 6 if scratch else 8)
        self.assertRegex(nodes["nosuchhost"]["problem"],
                         r"^did not answer: mpirun exit \d+: .*nosuchhost")
        p = subprocess.run([RANKSCOPE, "sweep", "--hostfile", hosts, "--drain"], env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--hostfile is for clusters without SLURM: no --drain", p.stderr)


if __name__ == "__main__":
    unittest.main()
