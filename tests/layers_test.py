#!/usr/bin/env python3
"""The layers of CMakeLists.txt hold in the sources: every `#include "dir/..."` of a layer names a
layer below it (or its own), and core/ reads no file and no /proc (the inject library links it).

  launchers -> coordinator, agent -> proto -> model -> core

agent/inject is the library loaded into the user's processes: core and itself only. The offline
`inspect` commands (launchers/inspect.cc) read the model, never the agent. The generated protobuf
headers (rankscope/v1/...) are proto's. Tests (*_test.cc) may reach across: the uplink's test
runs a real coordinator in its process."""
import os
import re
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_0-9]+)/')
OURS = {"core", "model", "proto", "rankscope", "agent", "coordinator", "launchers"}

# Layer (a folder, or a file) -> the top folders its includes may name. The most specific wins.
ALLOWED = {
    "core": {"core"},
    "model": {"core", "model"},
    "proto": {"core", "model", "proto", "rankscope"},
    "agent": {"core", "model", "proto", "rankscope", "agent"},
    "agent/inject": {"core", "agent"},  # agent/inject/... only: checked below
    "coordinator": {"core", "model", "proto", "rankscope", "coordinator"},
    "launchers/inspect.cc": {"core", "model", "launchers"},
}
# Reading files or /proc: what core must not do.
IO = re.compile(r'\b(fopen|ifstream|ofstream|opendir|::open\s*\(|open\s*\(\s*"|"/proc)')


def sources(top):
    for d, _, files in os.walk(os.path.join(ROOT, top)):
        for f in files:
            if f.endswith((".cc", ".h")):
                yield os.path.relpath(os.path.join(d, f), ROOT)


def layer_of(path):
    best = None
    for layer in ALLOWED:
        if path == layer or path.startswith(layer + "/"):
            if best is None or len(layer) > len(best):
                best = layer
    return best


class Layers(unittest.TestCase):
    def test_includes_point_down(self):
        wrong = []
        for top in ("core", "model", "proto", "agent", "coordinator", "launchers"):
            for path in sources(top):
                layer = layer_of(path)
                if layer is None or path.endswith("_test.cc"):
                    continue
                with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or m.group(1) not in OURS:
                            continue
                        target = line.split('"')[1]
                        ok = m.group(1) in ALLOWED[layer]
                        if layer == "agent/inject" and m.group(1) == "agent":
                            ok = target.startswith("agent/inject/")
                        if not ok:
                            wrong.append(f"{path}:{n}: {layer} includes {target}")
        self.assertEqual(wrong, [], "\n".join(wrong))

    def test_core_reads_no_files(self):
        wrong = []
        for path in sources("core"):
            with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    code = line.split("//")[0]
                    if IO.search(code):
                        wrong.append(f"{path}:{n}: {line.strip()}")
        self.assertEqual(wrong, [], "\n".join(wrong))

    def test_the_check_sees_a_wrong_include(self):
        # The rule itself: a coordinator file naming the agent is refused, a model file naming
        # core is not.
        self.assertNotIn("agent", ALLOWED[layer_of("coordinator/session.h")])
        self.assertIn("core", ALLOWED[layer_of("model/nccl/nccl_log.h")])
        self.assertEqual(layer_of("agent/inject/pmpi_p2p.cc"), "agent/inject")
        self.assertIsNotNone(IO.search('std::ifstream in(path);'))


if __name__ == "__main__":
    sys.exit(unittest.main())
