"""Opens an HTML report in headless Chromium (Debian's ``chromium`` and ``chromium-driver``,
driven by Selenium), waits for the Plotly charts to draw, and reports what it saw: console
errors, each chart's drawn size, and a screenshot.

:func:`layout` measures the page with its own layout (JavaScript run in the page): for every
chart, its SVG's box, the boxes of its axis titles, tick labels and legend, its plot area and,
for a per-task chart, the plot height per task; the task table's width against the window's.

Also a script, to refresh the README's screenshot from a report:
``python tests/browser_check.py REPORT.html docs/report_screenshot.png [--width 1280]
[--max-height 2400]`` (a page taller than ``--max-height`` is shot down to there).
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


# Where every part of every chart lies, and the task table's width (CSS pixels).
_LAYOUT = """
function box(el) {
  var r = el.getBoundingClientRect();
  return {left: r.left, top: r.top, right: r.right, bottom: r.bottom, width: r.width, height: r.height};
}
function boxes(root, selector) {
  return Array.from(root.querySelectorAll(selector)).filter(function (el) {
    var r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0;
  }).map(function (el) { var b = box(el); b.text = el.textContent; return b; });
}
var charts = Array.from(document.querySelectorAll('[data-chart]')).map(function (holder) {
  var svg = holder.querySelector('svg.main-svg');
  var plot = holder.querySelector('.draglayer .xy .nsewdrag') || holder.querySelector('.nsewdrag');
  var legend = holder.querySelector('g.legend');
  var tasks = holder.dataset.tasks ? parseInt(holder.dataset.tasks, 10) : null;
  return {
    id: holder.dataset.chart, tasks: tasks, svg: svg ? box(svg) : null, box: box(holder.parentElement),
    plot: plot ? box(plot) : null, legend: legend ? box(legend) : null,
    titles: boxes(holder, '.g-xtitle text, .g-ytitle text'),
    ticks: boxes(holder, '.xtick text, .ytick text'),
    yticks: boxes(holder, '.ytick text').length
  };
});
var table = document.getElementById('tasks');
return {
  window: {width: window.innerWidth, height: window.innerHeight},
  page: {scrollWidth: document.documentElement.scrollWidth},
  table: table ? {scrollWidth: table.scrollWidth, right: table.getBoundingClientRect().right,
                  rows: table.tBodies[0].rows.length,
                  columns: Array.from(table.tHead.rows[0].cells).map(function (c) { return c.textContent; })}
               : null,
  banner: (document.getElementById('progress') || {}).textContent || null,
  charts: charts
};
"""


def _wait_for_charts(driver: Any, timeout_s: float) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    charts: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        charts = driver.execute_script(_MEASURE)
        if charts and all(c["svg"] for c in charts):
            break
        time.sleep(0.25)
    time.sleep(0.5)  # let the responsive relayout settle before measuring for good
    return driver.execute_script(_MEASURE)


def layout(report: Path, *, width: int = 1280, timeout_s: float = 60.0) -> dict[str, Any]:
    """Loads ``report`` in a ``width`` px window; returns the page's own measurements
    (:data:`_LAYOUT`) and its console errors."""
    driver = _driver(width, 1000)
    try:
        driver.get(Path(report).resolve().as_uri())
        _wait_for_charts(driver, timeout_s)
        found = driver.execute_script(_LAYOUT)
        found["console_errors"] = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        return found
    finally:
        driver.quit()


def inside(inner: dict[str, float], outer: dict[str, float], slack: float = 1.0) -> bool:
    """Whether box ``inner`` lies within box ``outer`` (``slack`` px of rounding allowed)."""
    return (inner["left"] >= outer["left"] - slack and inner["right"] <= outer["right"] + slack
            and inner["top"] >= outer["top"] - slack and inner["bottom"] <= outer["bottom"] + slack)


def overlap(a: dict[str, float], b: dict[str, float], slack: float = 1.0) -> bool:
    """Whether boxes ``a`` and ``b`` overlap by more than ``slack`` px both ways."""
    return (min(a["right"], b["right"]) - max(a["left"], b["left"]) > slack
            and min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > slack)


def render(report: Path, screenshot: Path | None = None, *, width: int = 1400,
           timeout_s: float = 60.0, sort_by: str | None = None,
           max_height: int = 8000) -> dict[str, Any]:
    """Loads ``report``; returns console errors, charts, missing-chart notes and the task table's
    first column after clicking the header ``sort_by`` twice (descending) when given. The
    screenshot shows the page down to ``max_height`` px."""
    driver = _driver(width, 1000)
    try:
        driver.get(Path(report).resolve().as_uri())
        charts = _wait_for_charts(driver, timeout_s)
        notes = driver.execute_script(
            "return Array.from(document.querySelectorAll('[data-chart-missing]'))"
            ".map(function (b) { return b.dataset.chartMissing; });")
        sorted_tasks = None
        if sort_by is not None:
            header = driver.execute_script(
                "var want = arguments[0]; return Array.from(document.querySelectorAll('#tasks th'))"
                ".findIndex(function (th) { return th.textContent === want; });", sort_by)
            th = driver.find_elements("css selector", "#tasks th")[header]
            th.click()
            th.click()
            sorted_tasks = driver.execute_script(
                "return Array.from(document.querySelectorAll('#tasks tbody tr'))"
                ".map(function (r) { return r.cells[1].textContent; });")
        if screenshot is not None:
            full = driver.execute_script("return document.documentElement.scrollHeight")
            driver.set_window_size(width, min(int(full) + 40, max_height))
            time.sleep(0.5)
            driver.save_screenshot(str(screenshot))
        errors = [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]
        return {"console_errors": errors, "charts": charts, "notes": notes,
                "sorted_tasks": sorted_tasks}
    finally:
        driver.quit()


def _wait(driver: Any, script: str, timeout_s: float, *args: Any) -> Any:
    """Runs ``script`` in the page until it returns something truthy (or the time is up)."""
    deadline = time.monotonic() + timeout_s
    found = None
    while time.monotonic() < deadline:
        found = driver.execute_script(script, *args)
        if found:
            return found
        time.sleep(0.02)
    return found


_SAMPLE = """
var d = document.querySelector('details.sv-sample.sv-target[open] .sv-detail') ||
        document.querySelector('details.sv-sample[open] .sv-detail');
if (!d) { return null; }
function text(sel) { var el = d.querySelector(sel); return el ? el.textContent : null; }
var facts = {};
d.querySelectorAll('dl dt').forEach(function (dt) {
  facts[dt.textContent] = dt.nextElementSibling.textContent;
});
return {facts: facts, message: text('.sv-message pre'), prompt: text('.sv-prompt pre'),
        prompt_summary: text('.sv-prompt summary'), prompt_open: !!d.querySelector('.sv-prompt[open]'),
        answer: text('.sv-answer pre'), kernel: text('.sv-kernel pre'), diff: text('.sv-diff'),
        added: d.querySelectorAll('.sv-diff .add').length,
        removed: d.querySelectorAll('.sv-diff .del').length};
"""


def sample_view(report: Path, task: str, step: str, *, width: int = 1280, timeout_s: float = 30.0,
                filter_status: str | None = None) -> dict[str, Any]:
    """Opens the sample view of ``report`` (its page ``NAME.samples.html``) as a person would, in
    headless Chromium: waits until the page is interactive, opens ``task`` (its samples load
    then), opens the sample ``step``, then its prompt; then opens the report and follows its task
    table's link to the task's best sample. Returns
    ``ready_ms`` (from navigation start until the page's scripts have run and the sample view
    answers: ``window.jaxbenchSamplesReady``), ``open_ms`` (the click on the task until its
    samples are listed), ``sample`` (what the opened sample shows: facts, message, prompt,
    answer, kernel, diff), ``best`` (the same for the best kernel's linked sample), with
    ``filter_status`` the statuses listed after choosing it, and console errors."""
    driver = _driver(width, 1000)
    report = Path(report)
    try:
        driver.get(report.with_name(report.stem + ".samples.html").resolve().as_uri())
        ready = _wait(driver, "return window.jaxbenchSamplesReady || null;", timeout_s)
        out: dict[str, Any] = {"ready_ms": ready}
        index = driver.execute_script(
            "var want = arguments[0], t = JSON.parse(document.getElementById('sv-index').textContent).tasks;"
            "return t.findIndex(function (x) { return x.task === want; });", task)
        summary = driver.find_element("css selector", f"#sv-task-{index} > summary")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", summary)
        started = time.monotonic()
        summary.click()
        listed = _wait(driver, f"return document.querySelectorAll('#sv-task-{index} "
                               f"details.sv-sample').length;", timeout_s)
        out["open_ms"] = (time.monotonic() - started) * 1000
        out["listed"] = listed
        if not listed:  # the task's samples did not load: nothing more to open
            out["console_errors"] = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
            return out
        item = driver.execute_script(
            f"var want = arguments[0]; return Array.from(document.querySelectorAll("
            f"'#sv-task-{index} details.sv-sample > summary'))"
            ".find(function (s) { return s.querySelector('b').textContent === want; });", step)
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", item)
        item.click()
        _wait(driver, "return !!document.querySelector('details.sv-sample[open] .sv-detail');", timeout_s)
        prompt = item.find_element("xpath", "..").find_element("css selector", ".sv-prompt > summary")
        out["prompt_collapsed"] = not driver.execute_script(
            "return arguments[0].parentElement.open;", prompt)
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", prompt)
        prompt.click()
        _wait(driver, "return arguments[0].parentElement.querySelector('pre').textContent.length;", timeout_s,
              prompt)
        out["sample"] = _wait(driver, _SAMPLE, timeout_s)
        if filter_status is not None:
            from selenium.webdriver.support.ui import Select

            Select(driver.find_element("css selector", "#sv-status")).select_by_value(filter_status)
            out["filtered"] = driver.execute_script(
                f"return Array.from(document.querySelectorAll('#sv-task-{index} details.sv-sample .pill'))"
                ".map(function (p) { return p.textContent; });")
            out["count"] = driver.execute_script("return document.getElementById('sv-count').textContent;")
            Select(driver.find_element("css selector", "#sv-status")).select_by_value("")
        out["console_errors"] = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        driver.get(report.resolve().as_uri())
        _wait_for_charts(driver, timeout_s)
        link = driver.execute_script(
            "var want = arguments[0]; return Array.from(document.querySelectorAll('#tasks a.sample-link'))"
            ".find(function (a) { return a.closest('tr').cells[1].textContent === want; });", task)
        if link is not None:
            out["best_step"] = link.text
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", link)
            link.click()
            out["best"] = _wait(driver, "var t = document.querySelector('details.sv-sample.sv-target[open]');"
                                        "return t && t.querySelector('.sv-detail') ? "
                                        "t.querySelector('summary b').textContent : null;", timeout_s)
        out["console_errors"] += [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        return out
    finally:
        driver.quit()


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python tests/browser_check.py")
    parser.add_argument("report", type=Path)
    parser.add_argument("screenshot", type=Path)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--max-height", type=int, default=8000)
    args = parser.parse_args(argv)
    reason = missing()
    if reason:
        print(f"cannot run: {reason}", file=sys.stderr)
        return 2
    seen = render(args.report, args.screenshot, width=args.width, max_height=args.max_height)
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
