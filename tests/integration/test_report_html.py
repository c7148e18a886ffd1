"""report.html in a real browser: headless Chromium renders the page of a real straggler run;
the screenshot must not be blank and the page must log nothing to the console (it runs no script
and its Content-Security-Policy refuses anything from outside: a violation is a console error)."""
import os
import re
import shutil
import struct
import subprocess
import sys
import unittest
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import MPI_TRAIN, RANKSCOPE, RankscopeTest, mpirun  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")

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
        with open(os.path.join(out, "report.html")) as f:
            html = f.read()
        # mpi_train has step ranges: the worst step across all ranks, with the straggler in it.
        self.assertIn('<section id="worst"><h2>The step with the most waiting', html)
        self.assertIn('<section id="heatmap">', html)
        worst = html[html.index('<section id="worst">'):]
        worst = worst[:worst.index("</section>")]
        # Every other rank waits for rank 2 there (red "rank N waiting" bars).
        waiting = {int(r) for r in re.findall(r"<title>rank (\d+) waiting", worst)}
        self.assertLessEqual({0, 1, 3}, waiting, worst[:2000])

    def test_gpu_session_renders_topology_nccl_and_nvml(self):
        # The session recorded on 2xH200 (tests/fixtures/h200x2-nccl-allreduce-bench), re-analysed
        # offline: the GPU sections (NCCL bus bandwidth, NVML, the node's topology matrix) render
        # without a console message too.
        out = os.path.join(self.tmp, "gpu")
        proc = subprocess.run(
            [RANKSCOPE, "report", os.path.join(FIXTURES, "h200x2-nccl-allreduce-bench"), "-o", out,
             "-q"], capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        html_path = os.path.join(out, "report.html")
        with open(html_path) as f:
            html = f.read()
        for heading in ("<h3>NCCL 2.28.3", "<h3>GPUs (NVML", "<h3>Node topology",
                        '<section id="worst">', '<section id="heatmap">'):
            self.assertIn(heading, html)
        topology = html[html.index("<h3>Node topology"):]
        self.assertIn("NV18", topology[:topology.index("</table>")])
        png = os.path.join(self.tmp, "gpu.png")
        rc, log = render(html_path, png)
        self.assertEqual(rc, 0, log)
        pixels, _, _ = png_pixels(png)
        self.assertGreater(len(set(pixels)), 64)
        self.assertEqual(console_lines(log), [])

    def test_inspect_ncu_page_renders_the_roofline(self):
        """`inspect ncu --html` on the H200 Nsight Compute fixtures: the roofline chart and stall
        bars render, nothing in the console."""
        ncu = os.path.join(FIXTURES, "h200-ncu")
        page = os.path.join(self.tmp, "kernels.html")
        proc = subprocess.run(
            [RANKSCOPE, "inspect", "ncu", "--html", page,
             os.path.join(ncu, "torch_gemm_gelu.raw.csv"), os.path.join(ncu, "heavy_stencil.raw.csv"),
             os.path.join(ncu, "light_kernel.raw.csv")],
            capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        png = os.path.join(self.tmp, "kernels.png")
        rc, log = render(page, png)
        self.assertEqual(rc, 0, log)
        pixels, width, height = png_pixels(png)
        self.assertEqual((width, height), (1280, 2000))
        self.assertGreater(len(set(pixels)), 64)
        self.assertEqual(console_lines(log), [])
        with open(page) as f:
            html = f.read()
        self.assertEqual(html.count("<polyline"), 4)  # the H200's fp64, fp32, fp16, tensor roofs
        self.assertIn(">heavy_stencil #0<", html)

    def test_report_html_draws_the_roofline_of_a_sessions_ncu_report(self):
        """report.html of the recorded H100 GPU straggler session joined with ncu's report of its
        kernel (`rankscope report --ncu`): the Nsight section's chart renders under the page's
        policy, nothing in the console."""
        folder = os.path.join(self.tmp, "gpu")
        os.makedirs(folder)
        shutil.copy(os.path.join(FIXTURES, "h100-mpi-gpu-steps", "heavy-rank1.sqlite"),
                    os.path.join(folder, "session.sqlite"))
        csv = os.path.join(FIXTURES, "h200-ncu", "heavy_stencil.raw.csv")
        proc = subprocess.run([RANKSCOPE, "report", "-q", folder, "--ncu", "1=" + csv],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        page = os.path.join(folder, "report.html")
        with open(page) as f:
            html = f.read()
        section = html[html.index('<section id="ncu">'):]
        self.assertIn("<polyline", section)  # the roofs
        self.assertIn(">heavy_stencil #0<", section)  # the kernel's dot
        png = os.path.join(self.tmp, "report.png")
        rc, log = render(page, png)
        self.assertEqual(rc, 0, log)
        pixels, _, _ = png_pixels(png)
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
