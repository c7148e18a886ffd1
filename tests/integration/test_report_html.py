"""report.html in a real browser: headless Chromium renders the page of a real straggler run;
the screenshot must not be blank and the page must log nothing to the console (it runs no script
and its Content-Security-Policy refuses anything from outside: a violation is a console error)."""
import os
import shutil
import struct
import subprocess
import sys
import unittest
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import MPI_TRAIN, RankscopeTest, mpirun  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def png_pixels(path):
    """The decompressed scanlines of a PNG (all IDAT chunks), and its width and height."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return zlib.decompress(idat), width, height


def render(html_path, png_path):
    """Screenshot of the page and the browser's log (console messages included)."""
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--hide-scrollbars", "--window-size=1280,2000", "--enable-logging=stderr", "--v=0",
         "--screenshot=" + png_path, "file://" + html_path],
        capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stderr


def console_lines(log):
    # "INFO:CONSOLE(12)" in older Chromium, "INFO:CONSOLE:12" in newer.
    return [line for line in log.splitlines() if ":CONSOLE" in line]


@unittest.skipUnless(CHROMIUM, "chromium is not installed (scripts/install-deps.sh installs it)")
class ReportHtml(RankscopeTest):
    def test_renders_in_chromium_without_console_errors(self):
        proc, out = self.run_rankscope(
            mpirun(4, MPI_TRAIN, "--steps", "20", "--slow-rank", "2", "--slow-ms", "20"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        png = os.path.join(self.tmp, "report.png")
        rc, log = render(os.path.join(out, "report.html"), png)
        self.assertEqual(rc, 0, log)
        pixels, width, height = png_pixels(png)
        self.assertEqual((width, height), (1280, 2000))
        # Not blank: a white page compresses to a handful of byte values.
        self.assertGreater(len(set(pixels)), 64)
        self.assertEqual(console_lines(log), [])

    def test_the_console_check_sees_a_csp_violation(self):
        # The same check on a page that breaks its own policy must see the error, or the test
        # above proves nothing.
        bad = os.path.join(self.tmp, "bad.html")
        with open(bad, "w") as f:
            f.write('<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" '
                    "content=\"default-src 'none'\"></head><body><p>x</p>"
                    "<script>console.log('ran')</script></body></html>")
        rc, log = render(bad, os.path.join(self.tmp, "bad.png"))
        self.assertEqual(rc, 0, log)
        self.assertTrue(console_lines(log), log[-2000:])


if __name__ == "__main__":
    unittest.main()
