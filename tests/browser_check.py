"""Opens an HTML report in headless Chromium (Debian's ``chromium`` and ``chromium-driver``,
driven by Selenium), waits for the Plotly charts to draw, and reports what it saw: console
errors, each chart's drawn size, and a screenshot.

Also a script, to refresh the README's screenshot from a report:
``python tests/browser_check.py REPORT.html docs/report_screenshot.png``.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
DRIVERS = ("chromedriver",)


def missing() -> str | None:
    """Why the browser check cannot run here, or None when it can."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    if not any(shutil.which(b) for b in BROWSERS):
        return "no Chromium browser (Debian: apt-get install chromium chromium-driver)"
    if not any(shutil.which(d) for d in DRIVERS):
        return "no chromedriver (Debian: apt-get install chromium-driver)"
    return None


def _driver(width: int, height: int) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = next(shutil.which(b) for b in BROWSERS if shutil.which(b))
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--hide-scrollbars", f"--window-size={width},{height}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver_path = next(shutil.which(d) for d in DRIVERS if shutil.which(d))
    return webdriver.Chrome(service=Service(executable_path=driver_path), options=options)


# Every chart container and what Plotly drew into it (its main SVG), measured by the browser.
_MEASURE = """
return Array.from(document.querySelectorAll('[data-chart]')).map(function (box) {
  var svg = box.querySelector('svg.main-svg');
  var r = svg ? svg.getBoundingClientRect() : box.getBoundingClientRect();
  return {id: box.dataset.chart, svg: !!svg, width: r.width, height: r.height,
          marks: box.querySelectorAll('.point, .bars path, .scatterlayer path.js-line').length};
});
"""


def render(report: Path, screenshot: Path | None = None, *, width: int = 1400,
           timeout_s: float = 60.0, sort_by: str | None = None) -> dict[str, Any]:
    """Loads ``report``; returns console errors, charts, missing-chart notes and the task table's
    first column after clicking the header ``sort_by`` twice (descending) when given."""
    driver = _driver(width, 1000)
    try:
        driver.get(Path(report).resolve().as_uri())
        deadline = time.monotonic() + timeout_s
        charts: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            charts = driver.execute_script(_MEASURE)
            if charts and all(c["svg"] for c in charts):
                break
            time.sleep(0.25)
        time.sleep(0.5)  # let the responsive relayout settle before measuring for good
        charts = driver.execute_script(_MEASURE)
        notes = driver.execute_script(
            "return Array.from(document.querySelectorAll('[data-chart-missing]'))"
            ".map(function (b) { return b.dataset.chartMissing; });")
        sorted_tasks = None
        if sort_by is not None:
            header = driver.execute_script(
                "return Array.from(document.querySelectorAll('#tasks th'))"
                ".findIndex(function (th) { return th.textContent === arguments[0]; });", sort_by)
            th = driver.find_elements("css selector", "#tasks th")[header]
            th.click()
            th.click()
            sorted_tasks = driver.execute_script(
                "return Array.from(document.querySelectorAll('#tasks tbody tr'))"
                ".map(function (r) { return r.cells[1].textContent; });")
        if screenshot is not None:
            full = driver.execute_script("return document.documentElement.scrollHeight")
            driver.set_window_size(width, min(int(full) + 40, 8000))
            time.sleep(0.5)
            driver.save_screenshot(str(screenshot))
        errors = [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]
        return {"console_errors": errors, "charts": charts, "notes": notes,
                "sorted_tasks": sorted_tasks}
    finally:
        driver.quit()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python tests/browser_check.py REPORT.html SCREENSHOT.png", file=sys.stderr)
        return 2
    reason = missing()
    if reason:
        print(f"cannot run: {reason}", file=sys.stderr)
        return 2
    seen = render(Path(argv[0]), Path(argv[1]))
    for chart in seen["charts"]:
        print(f"chart {chart['id']}: {chart['width']:.0f}x{chart['height']:.0f} px, "
              f"{chart['marks']} marks")
    for note in seen["notes"]:
        print(f"not drawn (note shown): {note}")
    print(f"console errors: {len(seen['console_errors'])}")
    for error in seen["console_errors"]:
        print(f"  {error.get('message')}")
    return 1 if seen["console_errors"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
