#!/usr/bin/env python3
"""Every recorded session under tests/fixtures gives the report.json it gave when its golden copy
(tests/fixtures/report-golden/NAME.json) was written: refactoring the analyses, the model or the
proto must not change a report. Only what names this run is left out: the folder the session was
copied to (written as <session>) and rankscope's version. Floats compare to 1e-9 relative.

  report_identity_test.py RANKSCOPE             check
  report_identity_test.py RANKSCOPE --update    rewrite the golden copies (a change meant to alter
                                                reports; say which and why in the commit)"""
import json
import math
import os
import sys
import unittest

import recorded_sessions

RANKSCOPE = None
GOLDEN = os.path.join(recorded_sessions.FIXTURES, "report-golden")


def normalised(report, session_dir):
    """The report with what names this run replaced, as plain JSON values."""
    text = json.dumps(report, sort_keys=True).replace(session_dir, "<session>")
    out = json.loads(text)
    out.get("generated_by", {}).pop("version", None)
    return out


def differences(want, got, path="$"):
    """Where two JSON values differ, as 'path: want -> got' lines (floats to 1e-9 relative)."""
    if isinstance(want, dict) and isinstance(got, dict):
        lines = []
        for key in sorted(set(want) | set(got)):
            if key not in got:
                lines.append(f"{path}.{key}: missing now (was {json.dumps(want[key])[:120]})")
            elif key not in want:
                lines.append(f"{path}.{key}: new ({json.dumps(got[key])[:120]})")
            else:
                lines += differences(want[key], got[key], f"{path}.{key}")
        return lines
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{path}: {len(want)} items -> {len(got)}"]
        lines = []
        for i, (w, g) in enumerate(zip(want, got)):
            lines += differences(w, g, f"{path}[{i}]")
        return lines
    numbers = (int, float)
    if (isinstance(want, numbers) and isinstance(got, numbers) and not isinstance(want, bool)
            and not isinstance(got, bool)):
        if math.isclose(want, got, rel_tol=1e-9, abs_tol=1e-12):
            return []
    elif want == got:
        return []
    return [f"{path}: {json.dumps(want)[:120]} -> {json.dumps(got)[:120]}"]


class ReportIdentity(unittest.TestCase):

    def test_every_recorded_session_gives_its_golden_report(self):
        self.check_every_session(())

    # The analyses that fold window by window (docs/design.md, "Cost bounded by the window"), run
    # that way with windows of about 100 ms (tens to a hundred and more per session), give the
    # same reports.
    def test_window_by_window_every_recorded_session_gives_its_golden_report(self):
        if UPDATE:
            self.skipTest("goldens are written from the whole-run analysis")
        self.check_every_session(("--by-window-ms", "100"))

    def check_every_session(self, extra):
        sessions = recorded_sessions.all_sessions()
        self.assertGreaterEqual(len(sessions), 17)
        for name, sqlite_path in sorted(sessions.items()):
            with self.subTest(name):
                replay = recorded_sessions.Reanalysis(RANKSCOPE, sqlite_path, extra)
                try:
                    got = normalised(replay.report, replay.session)
                finally:
                    replay.close()
                golden = os.path.join(GOLDEN, name + ".json")
                if UPDATE:
                    with open(golden, "w") as f:
                        json.dump(got, f, indent=1, sort_keys=True)
                        f.write("\n")
                    continue
                with open(golden) as f:
                    want = json.load(f)
                diff = differences(want, got)
                self.assertEqual(diff, [], f"{name}: report.json changed in {len(diff)} places "
                                 f"(first 20 below); if that is meant, run {sys.argv[0]} "
                                 f"RANKSCOPE --update and say why in the commit\n  " +
                                 "\n  ".join(diff[:20]))


if __name__ == "__main__":
    RANKSCOPE = sys.argv.pop(1)
    UPDATE = "--update" in sys.argv
    if UPDATE:
        sys.argv.remove("--update")
        os.makedirs(GOLDEN, exist_ok=True)
    unittest.main()
