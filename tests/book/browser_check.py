"""Open built book pages in headless Chromium and report what a reader would see broken.

For each page (loaded at 1,400 px wide in an iframe of a small harness page written next to the
build, so one Chromium process checks them all): the number of math blocks and how many were left
untypeset by MathJax, the tables whose right edge passes the content column without a scrolling
container that fits it, and the images that failed to load. Also usable by hand:
``python tests/book/browser_check.py _build/html book/scoreboard.html ...``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
HARNESS = "_browser_check.html"
SETTLE_MS = 4000  # after an iframe's load event: MathJax typesets asynchronously

_SCRIPT = r"""
const pages = __PAGES__;
const out = {};
function inspect(doc, win) {
  const main = doc.querySelector("main") || doc.body;
  const column = main.getBoundingClientRect().right + 1;
  const math = [...doc.querySelectorAll(".math")];
  const overflowing = [];
  for (const table of main.querySelectorAll("table")) {
    if (table.getBoundingClientRect().right <= column) continue;
    let el = table.parentElement, scrolls = false;
    for (; el && el !== main; el = el.parentElement) {
      const style = win.getComputedStyle(el).overflowX;
      if ((style === "auto" || style === "scroll") && el.getBoundingClientRect().right <= column) { scrolls = true; break; }
    }
    if (!scrolls) overflowing.push((table.innerText || "").slice(0, 80));
  }
  const images = [...doc.images];
  return {math_blocks: math.length, math_untypeset: math.filter(m => !m.querySelector("mjx-container")).length,
          tables: main.querySelectorAll("table").length, tables_overflowing: overflowing,
          images: images.length,
          images_broken: images.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute("src"))};
}
let index = 0;
function next() {
  if (index >= pages.length) { document.getElementById("result").textContent = JSON.stringify(out); return; }
  const page = pages[index++];
  const frame = document.createElement("iframe");
  frame.style.width = "1400px"; frame.style.height = "900px";
  frame.onload = () => setTimeout(() => {
    try { out[page] = inspect(frame.contentDocument, frame.contentWindow); } catch (e) { out[page] = {error: String(e)}; }
    frame.remove(); next();
  }, __SETTLE__);
  frame.src = page; document.body.appendChild(frame);
}
next();
"""


def find_browser() -> str | None:
    """The first Chromium-like executable on PATH, or None."""
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def check_pages(html_dir: Path, pages: list[str], browser: str | None = None, timeout: int = 180) -> dict:
    """``{page: {math_blocks, math_untypeset, tables, tables_overflowing, images, images_broken}}``."""
    browser = browser or find_browser()
    if browser is None:
        raise FileNotFoundError(f"no Chromium found on PATH (tried {', '.join(BROWSERS)})")
    html_dir = Path(html_dir)
    script = _SCRIPT.replace("__PAGES__", json.dumps(pages)).replace("__SETTLE__", str(SETTLE_MS))
    harness = html_dir / HARNESS
    harness.write_text(f'<!doctype html><html><body><pre id="result">running</pre><script>{script}</script></body></html>')
    try:
        with tempfile.TemporaryDirectory() as profile:
            result = subprocess.run(
                [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
                 "--disable-background-networking", "--disable-component-update", f"--user-data-dir={profile}",
                 "--allow-file-access-from-files", "--window-size=1400,900",
                 f"--virtual-time-budget={(SETTLE_MS + 3000) * (len(pages) + 1)}", "--dump-dom",
                 harness.resolve().as_uri()], capture_output=True, text=True, timeout=timeout)
    finally:
        harness.unlink(missing_ok=True)
    found = re.search(r'<pre id="result">(.*?)</pre>', result.stdout, re.S)
    if not found or found.group(1) == "running":
        raise RuntimeError(f"the browser returned no result (exit {result.returncode}): {result.stderr[-2000:]}")
    return json.loads(found.group(1).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))


def problems(report: dict) -> list[str]:
    """One line per thing a reader would see broken; empty when every page is fine."""
    lines = []
    for page, r in report.items():
        if "error" in r:
            lines.append(f"{page}: could not be inspected: {r['error']}")
            continue
        if r["math_untypeset"]:
            lines.append(f"{page}: {r['math_untypeset']} of {r['math_blocks']} math blocks not typeset")
        lines += [f"{page}: table wider than the content column: {t!r}" for t in r["tables_overflowing"]]
        lines += [f"{page}: image does not load: {src}" for src in r["images_broken"]]
    return lines


if __name__ == "__main__":
    out = check_pages(Path(sys.argv[1]), sys.argv[2:])
    print(json.dumps(out, indent=1))
    print("\n".join(problems(out)) or "no problems")
