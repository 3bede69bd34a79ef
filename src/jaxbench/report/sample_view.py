"""The sample view of the HTML report: every sample of an agent run, task by task.

It is a page of its own beside the report, ``NAME.samples.html`` (the report links to it, and
its task table's best kernels to their samples), without charts or the plotting library, so it
is interactive at once whatever the run's size. The page carries only an index (per task and
series: the number of samples, their counts by status and failure category, the best sample's
step), so it loads as fast for 28,800 samples as for 8. Each task's samples (prompts, answers,
kernels, verdicts, lineage) are written beside the page, one script per task,
``NAME.samples/<i>.js``, loaded when the task is opened: a ``<script>`` element, which
browsers load from ``file://`` where ``fetch()`` is refused, so the report opens offline from
disk. Within a task file the sources are kept once each and the
prompt prefix a series' prompts share (the task statement) once per series.

In the page: filters by series, status and failure category (the counts of every task follow
them before anything is loaded); per task and series the samples in lineage order (a sample
under its parent, indented); a sample opens to its verdict, stage, message and figures, its
lineage (parent, children, crossover partner, plan), the model call's facts, the prompt
(collapsed), the answer, the extracted kernel and the diff from its parent (computed in the
browser when the sample is opened). A link ``#sample=TASK/SERIES/STEP`` (URL-encoded parts)
opens a sample; the task table's best kernels link to theirs.
"""

from __future__ import annotations

import json
import os
import shutil
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jaxbench.report import taxonomy
from jaxbench.report.data import STATUS_ORDER, RunData
from jaxbench.report.samples import LINEAGE, best_steps, collect, figures

MIN_PREFIX = 200  # a shared prompt prefix shorter than this is not worth a table entry


def sidecar_dir(out: Path) -> Path:
    """The folder of a report's per-task sample files: ``NAME.samples`` beside ``NAME.html``."""
    return out.with_name(out.stem + ".samples")


def sample_href(task: str, series: str, step: str, page: str = "") -> str:
    """The link that opens one sample in the sample view (``page``: its file, from the report)."""
    return f"{quote(page)}#sample=" + "/".join(quote(part, safe="") for part in (task, series, step))


def _prompt(text: str | None, prefixes: list[str], prefix: int | None) -> list[Any] | None:
    """A prompt as [prefix index, rest] ([-1, whole] when it does not start with the prefix)."""
    if text is None:
        return None
    if prefix is not None and text.startswith(prefixes[prefix]):
        return [prefix, text[len(prefixes[prefix]):]]
    return [-1, text]


def _task_data(run: RunData, task: str, by_series: dict[str, list[dict[str, Any]]],
               source_cache: dict[str, str | None]) -> dict[str, Any]:
    """One task's samples as the page reads them."""
    prefixes: list[str] = []
    sources: list[str] = []
    source_index: dict[str, int] = {}
    out: dict[str, list[dict[str, Any]]] = {}
    for series, samples in by_series.items():
        prompts = [s["call"]["prompt"] for s in samples
                   if s["call"] and isinstance(s["call"].get("prompt"), str)]
        shared = os.path.commonprefix(prompts) if len(prompts) > 1 else ""
        prefix = None
        if len(shared) >= MIN_PREFIX:
            prefix = len(prefixes)
            prefixes.append(shared)
        rows = []
        for s in samples:
            e = s["event"]
            key = e.get("source_file") or e.get("source_sha256") or f"#{e.get('_index')}"
            if key not in source_cache:
                source_cache[key] = run.source(e)[0]
            source = source_cache[key]
            k = None
            if source is not None:
                if source not in source_index:
                    source_index[source] = len(sources)
                    sources.append(source)
                k = source_index[source]
            call = s["call"] or {}
            row: dict[str, Any] = {
                "step": s["step"], "slot": s["sample"], "parent": s["parent"], "depth": s["depth"],
                "children": s["children"], "seed": s["seed"], "status": s["status"], "stage": s["stage"],
                "cat": s["category"], "message": s["message"], "figs": figures(e), "k": k,
                "lineage": [[name, e[name]] for name in LINEAGE if e.get(name) not in (None, "")],
                "prompt": _prompt(call.get("prompt"), prefixes, prefix),
                "answer": call.get("response") if call else None,
                "call": {k2: v for k2, v in call.items()
                         if k2 in ("model", "finish_reason", "input_tokens", "output_tokens", "cost",
                                   "latency_s", "cached", "error", "docs") and v not in (None, [], "")},
            }
            if e.get("synthetic"):
                row["synthetic"] = True
            if e.get("truncated"):
                row["truncated"] = True
            if e.get("novelty_rejections"):
                row["rejections"] = e["novelty_rejections"]
            if s["attempts"]:
                row["attempts"] = [{"step": a["step"], "prompt": _prompt(a.get("prompt"), prefixes, prefix),
                                    "answer": a.get("response") or a.get("error") or ""}
                                   for a in s["attempts"]]
            if s["plan"]:
                row["plan"] = {"step": s["plan"].get("step"), "prompt": s["plan"].get("prompt") or "",
                               "answer": s["plan"].get("response") or s["plan"].get("error") or ""}
            rows.append(row)
        out[series] = rows
    return {"task": task, "prefixes": prefixes, "sources": sources, "series": out}


def write_samples(run: RunData, out: Path) -> dict[str, Any] | None:
    """Writes the per-task files of the sample view of the report ``out`` beside it and returns
    the view's index (its page, :func:`page_body`, is written by ``html.write_report``); None,
    and no files (an earlier page removed), for a run without agent samples."""
    folder = sidecar_dir(out)
    found = collect(run)
    if not found:
        if folder.is_dir():
            shutil.rmtree(folder)
        sample_page(out).unlink(missing_ok=True)
        return None
    best = best_steps(run)
    staging = folder.with_name(folder.name + ".tmp")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    tasks = []
    series_names: set[str] = set()
    source_cache: dict[str, str | None] = {}
    for i, (task, by_series) in enumerate(found.items()):
        data = _task_data(run, task, by_series, source_cache)
        name = f"{i}.js"
        (staging / name).write_text(f"jaxbenchSamples({i},{json.dumps(data, separators=(',', ':'))});\n")
        entry: dict[str, Any] = {"task": task, "file": name, "series": {}}
        for series, samples in by_series.items():
            series_names.add(series)
            counts: dict[str, int] = {}
            for s in samples:
                if s["seed"]:
                    continue
                key = f"{s['status']}\t{s['category'] or ''}"
                counts[key] = counts.get(key, 0) + 1
            entry["series"][series] = {"n": sum(not s["seed"] for s in samples),
                                       "seeds": sum(s["seed"] for s in samples), "counts": counts,
                                       "best": best.get((task, series))}
        tasks.append(entry)
    if folder.exists():
        shutil.rmtree(folder)
    staging.replace(folder)
    return {"dir": folder.name, "page": sample_page(out).name, "tasks": tasks,
            "series": sorted(series_names)}


def sample_page(out: Path) -> Path:
    """The sample view's page of the report ``out``: ``NAME.samples.html`` beside it."""
    return out.with_name(out.stem + ".samples.html")


def page_body(run: RunData, out: Path, index: dict[str, Any], status_colors: dict[str, str]) -> str:
    """The body of the sample view's page (``NAME.samples.html``) of the report ``out``: no
    charts and no plotting library, the index and the script."""
    n = sum(s["n"] for t in index["tasks"] for s in t["series"].values())
    statuses = sorted({k.split("\t")[0] for t in index["tasks"] for s in t["series"].values()
                       for k in s["counts"]},
                      key=lambda st: (STATUS_ORDER[::-1].index(st) if st in STATUS_ORDER else 99, st))
    categories = [c for c in taxonomy.CATEGORIES
                  if any(k.endswith("\t" + c) for t in index["tasks"] for s in t["series"].values()
                         for k in s["counts"])]
    page_index = {**index, "colors": status_colors, "statuses": statuses,
                  "categories": {c: [taxonomy.label(c), taxonomy.meaning(c)] for c in categories}}
    blob = json.dumps(page_index, separators=(",", ":")).replace("</", "<\\/")
    config = run.config
    about = ", ".join(f"{k} {config[k]}" for k in ("method", "model", "budget", "target", "mode")
                      if config.get(k) is not None)
    body = (f"<h1>jaxbench samples: {escape(run.name)}</h1>"
            f"<p>{n:,} samples of {len(index['tasks'])} tasks ({escape(about)}). Open a task to load its "
            f"samples (each under its parent), a sample for its verdict, prompt, answer, kernel and the "
            f"diff from its parent. The charts and tables are in the report: "
            f"<a id=\"report-link\" href=\"{escape(out.name)}\">{escape(out.name)}</a>.</p>"
            f"<div class=\"sv-filters\" id=\"sv-filters\"></div><div id=\"sv-tasks\"></div>"
            f"<script type=\"application/json\" id=\"sv-index\">{blob}</script>"
            f"<script>{SAMPLE_JS}</script>")
    return body


def section(index: dict[str, Any] | None) -> str:
    """The report's pointer to its sample view ('' without one)."""
    if index is None:
        return ""
    n = sum(s["n"] for t in index["tasks"] for s in t["series"].values())
    return (f"<h2 id=\"samples\">Samples</h2><p>{n:,} samples of {len(index['tasks'])} tasks, one by one "
            f"(prompt, answer, kernel, verdict, stage, message, figures, diff from the parent, lineage; "
            f"filtered by status and failure category): <a id=\"samples-link\" href=\"{index['page']}\">"
            f"{index['page']}</a>. The task table's sample column opens a task's best sample.</p>")


SAMPLE_CSS = """
.sv-filters { margin: 8px 0; display: flex; gap: 16px; flex-wrap: wrap; align-items: center;
  font-size: 0.9em; }
.sv-filters label { display: flex; gap: 6px; align-items: center; }
details.sv-task { border: 1px solid #ddd; border-radius: 6px; margin: 4px 0; }
details.sv-task > summary { cursor: pointer; padding: 4px 8px; font-family: ui-monospace, monospace;
  font-size: 0.9em; }
details.sv-task.sv-none > summary { color: #999; }
.sv-body { padding: 4px 12px 12px 12px; }
.sv-series h4 { margin: 10px 0 4px 0; font-size: 0.95em; }
details.sv-sample > summary { cursor: pointer; font-size: 0.85em; padding: 1px 0; white-space: nowrap;
  overflow: hidden; text-overflow: ellipsis; }
details.sv-sample > summary .sv-msg { color: #a00; font-family: ui-monospace, monospace; }
details.sv-sample.sv-target > summary { background: #fff8c4; }
.sv-detail { margin: 4px 0 10px 0; padding: 6px 10px; border-left: 3px solid #ccc; background: #fcfcfc; }
.sv-detail dl { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; font-size: 0.85em;
  margin: 0 0 6px 0; }
.sv-detail dt { color: #666; } .sv-detail dd { margin: 0; overflow-wrap: anywhere; }
.sv-detail pre { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 480px; }
.sv-diff .add { background: #e6ffec; display: block; } .sv-diff .del { background: #ffebe9; display: block; }
.sv-diff .hunk { color: #0550ae; display: block; }
table#tasks td a.sample-link { overflow-wrap: anywhere; }
.sv-best { margin-left: 6px; padding: 0 5px; border-radius: 4px; background: #e8f5e9;
  border: 1px solid #2ca02c;
  font-size: 0.85em; }
"""

# The sample view's script: reads the index, builds the filters and the task entries, loads a
# task's file with a <script> element when it is opened (fetch() is refused on file://), renders
# a sample's details when it is opened, and follows #sample= links.
SAMPLE_JS = r"""
(function () {
  var INDEX = JSON.parse(document.getElementById('sv-index').textContent);
  var loaded = {}, waiting = {};
  var filters = {series: '', status: '', category: ''};
  function esc(s) {
    return String(s === null || s === undefined ? '' : s).replace(/[&<>"']/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c]; });
  }
  function pill(status) {
    return '<span class="pill" style="background:' + (INDEX.colors[status] || '#999') + '">' +
      esc(status) + '</span>';
  }
  function catLabel(c) { return c && INDEX.categories[c] ? INDEX.categories[c][0] : (c || ''); }
  function href(task, series, step) {
    return '#sample=' + [task, series, step].map(encodeURIComponent).join('/');
  }
  window.jaxbenchSamples = function (i, data) {
    loaded[i] = data;
    (waiting[i] || []).forEach(function (cb) { cb(data); });
    delete waiting[i];
  };
  function load(i, cb) {
    if (loaded[i]) { cb(loaded[i]); return; }
    if (waiting[i]) { waiting[i].push(cb); return; }
    waiting[i] = [cb];
    var s = document.createElement('script');
    s.src = INDEX.dir + '/' + INDEX.tasks[i].file;
    s.onerror = function () {
      var body = document.querySelector('#sv-task-' + i + ' .sv-body');
      if (body) { body.innerHTML = '<p class="warn">could not load ' + esc(s.src) + ' (keep the folder ' +
        esc(INDEX.dir) + ' beside this page)</p>'; }
    };
    document.head.appendChild(s);
  }
  function passes(status, cat) {
    return (!filters.status || status === filters.status) &&
      (!filters.category || (filters.category === '-' ? !cat : cat === filters.category));
  }
  function counted(entry, series) {
    var n = 0, correct = 0;
    Object.keys(entry.counts).forEach(function (key) {
      var parts = key.split('\t');
      if (passes(parts[0], parts[1])) { n += entry.counts[key]; }
      if (parts[0] === 'correct') { correct += entry.counts[key]; }
    });
    return {n: n, correct: correct};
  }
  function shownSeries(task) {
    return Object.keys(task.series).filter(function (s) { return !filters.series || s === filters.series; });
  }
  function summaryText(task) {
    var parts = [], total = 0;
    shownSeries(task).forEach(function (s) {
      var e = task.series[s], c = counted(e, s);
      total += c.n;
      var filtered = (filters.status || filters.category) ? c.n + ' of ' : '';
      parts.push(esc(s) + ': ' + filtered + e.n + ' samples, ' + c.correct + ' correct');
    });
    return {html: '<b>' + esc(task.task) + '</b> &nbsp; ' + parts.join(' &middot; '), total: total};
  }
  function select(id, label, options) {
    return '<label>' + esc(label) + ' <select id="' + id + '">' + options.map(function (o) {
      return '<option value="' + esc(o[0]) + '">' + esc(o[1]) + '</option>';
    }).join('') + '</select></label>';
  }
  function pair(s) { return [s, s]; }
  function buildFilters() {
    var box = document.getElementById('sv-filters');
    box.innerHTML =
      select('sv-series', 'method \u00b7 target', [['', 'all']].concat(INDEX.series.map(pair))) +
      select('sv-status', 'status', [['', 'all']].concat(INDEX.statuses.map(pair))) +
      select('sv-category', 'failure', [['', 'all'], ['-', 'none (correct)']].concat(
        Object.keys(INDEX.categories).map(function (c) { return [c, INDEX.categories[c][0]]; }))) +
      '<span id="sv-count"></span>';
    ['series', 'status', 'category'].forEach(function (name) {
      document.getElementById('sv-' + name).addEventListener('change', function (ev) {
        filters[name] = ev.target.value; refresh();
      });
    });
  }
  function buildTasks() {
    var html = INDEX.tasks.map(function (task, i) {
      return '<details class="sv-task" id="sv-task-' + i + '" data-i="' + i + '"><summary></summary>' +
        '<div class="sv-body">loading\u2026</div></details>';
    }).join('');
    var box = document.getElementById('sv-tasks');
    box.innerHTML = html;
    box.querySelectorAll('details.sv-task').forEach(function (d) {
      d.addEventListener('toggle', function () {
        if (d.open && !d.dataset.rendered) { openTask(+d.dataset.i); }
      });
    });
  }
  function refresh() {
    var matching = 0;
    INDEX.tasks.forEach(function (task, i) {
      var d = document.getElementById('sv-task-' + i), s = summaryText(task);
      d.querySelector('summary').innerHTML = s.html;
      d.classList.toggle('sv-none', s.total === 0);
      matching += s.total;
      if (d.open) { renderTask(i); }
    });
    document.getElementById('sv-count').textContent = matching + ' samples match';
  }
  function openTask(i, then) {
    load(i, function () {
      if (!document.getElementById('sv-task-' + i).dataset.rendered) { renderTask(i); }
      if (then) { then(); }
    });
  }
  function renderTask(i) {
    var data = loaded[i];
    if (!data) { return; }
    var task = INDEX.tasks[i];
    var filtering = !!(filters.status || filters.category);
    var html = shownSeries(task).map(function (series, j) {
      var rows = data.series[series] || [];
      var best = task.series[series].best;
      var items = [];
      rows.forEach(function (s, k) {
        if (filtering && (s.seed || !passes(s.status, s.cat))) { return; }
        var depth = filtering ? 0 : Math.min(s.depth, 40);
        var slot = s.seed ? 'seed' : (s.slot === null ? '-' : '#' + s.slot);
        var mutation = s.lineage.some(function (l) { return l[0] === 'mutation'; });
        var how = s.lineage.filter(function (l) {
          return (l[0] === 'origin' && !mutation && !s.seed) || l[0] === 'mutation' || l[0] === 'island'; })
          .map(function (l) { return l[0] === 'island' ? 'island ' + l[1] : l[1]; });
        var figs = s.figs.filter(function (f) { return f[0] === 'speedup' || f[0] === 'err / tol'; })
          .map(function (f) { return f[0] + ' ' + f[1]; });
        var msg = s.message ? s.message.split('\n')[0].slice(0, 160) : '';
        items.push('<details class="sv-sample" id="sv-' + i + '-' + j + '-' + k + '" data-k="' + k + '">' +
          '<summary style="padding-left:' + (depth * 14) + 'px">' + (depth ? '\u2514 ' : '') +
          esc(slot) + ' <b>' + esc(s.step) + '</b> ' + esc(how.join(' ')) + ' ' + pill(s.status) + ' ' +
          esc(catLabel(s.cat)) + ' ' + esc(figs.join(', ')) +
          (s.step === best ? '<span class="sv-best">best</span>' : '') +
          (msg ? ' <span class="sv-msg">' + esc(msg) + '</span>' : '') + '</summary></details>');
      });
      var seeds = task.series[series].seeds;
      return '<div class="sv-series" data-series="' + esc(series) + '"><h4>' + esc(series) + ' (' +
        task.series[series].n + ' samples' +
        (seeds ? ', ' + seeds + ' seed kernel' + (seeds > 1 ? 's' : '') : '') +
        (filtering ? ', ' + items.length + ' match' : '') + ')</h4>' +
        (items.join('') || '<p class="note">no sample matches</p>') + '</div>';
    }).join('');
    var body = document.querySelector('#sv-task-' + i + ' .sv-body');
    body.innerHTML = html;
    document.getElementById('sv-task-' + i).dataset.rendered = '1';
    body.querySelectorAll('details.sv-sample').forEach(function (d) {
      d.addEventListener('toggle', function () {
        if (d.open && !d.dataset.done) { renderSample(d); }
      });
    });
  }
  function seriesOf(d) { return d.closest('.sv-series').dataset.series; }
  function prompt(data, p) {
    if (!p) { return null; }
    return p[0] < 0 ? p[1] : data.prefixes[p[0]] + p[1];
  }
  function block(title, text, open, cls) {
    return '<details' + (open ? ' open' : '') + ' class="' + (cls || '') + '"><summary>' + esc(title) +
      '</summary><pre>' + esc(text) + '</pre></details>';
  }
  function renderSample(d) {
    var i = +d.closest('details.sv-task').dataset.i, data = loaded[i], task = INDEX.tasks[i];
    var series = seriesOf(d), rows = data.series[series], s = rows[+d.dataset.k];
    var byStep = {};
    rows.forEach(function (r) { byStep[r.step] = r; });
    function link(step) {
      return byStep[step] ? '<a href="' + esc(href(task.task, series, step)) + '">' + esc(step) + '</a>' :
        esc(step);
    }
    var facts = [['status', pill(s.status)], ['stage', esc(s.stage || '-')]];
    if (s.cat) {
      facts.push(['failure', esc(catLabel(s.cat)) + ' <span class="note">' +
        esc((INDEX.categories[s.cat] || [])[1] || '') + '</span>']);
    }
    s.figs.forEach(function (f) { facts.push([f[0], esc(f[1])]); });
    facts.push(['sample', esc(s.seed ? 'seed kernel (not a sample)' : s.slot)]);
    facts.push(['parent', s.parent ? link(s.parent) : '-']);
    s.lineage.forEach(function (l) {
      var step = l[0] === 'crossover_with' || l[0] === 'plan_step' || l[0] === 'reused_from';
      facts.push([l[0].replace('_', ' '), step ? link(String(l[1])) : esc(l[1])]);
    });
    facts.push(['children', s.children.length ? s.children.map(link).join(', ') : '-']);
    Object.keys(s.call || {}).forEach(function (k) {
      var v = s.call[k];
      var text = k === 'cost' ? '$ ' + Number(v).toFixed(4) :
        k === 'latency_s' ? Number(v).toFixed(1) + ' s' : Array.isArray(v) ? v.join(', ') : v;
      facts.push([k === 'latency_s' ? 'latency' : k.replace('_', ' '), esc(text)]);
    });
    if (s.synthetic) { facts.push(['evaluated', 'no: no kernel to evaluate (recorded as a compile error)']); }
    if (s.truncated) { facts.push(['truncated', 'the answer was cut off at max_tokens']); }
    var html = '<div class="sv-detail"><dl>' + facts.map(function (f) {
      return '<dt>' + esc(f[0]) + '</dt><dd>' + f[1] + '</dd>'; }).join('') + '</dl>';
    if (s.message) {
      html += '<div class="sv-message"><b>message</b><pre>' + esc(s.message) + '</pre></div>';
    }
    var p = prompt(data, s.prompt);
    html += p === null ?
      '<p class="note">no model call (' +
      (s.seed ? 'a shipped seed kernel' : 'no llm_call event for this step') + ')</p>' :
      '<details class="sv-prompt"><summary>prompt (' + p.length.toLocaleString() + ' characters)</summary>' +
      '<pre></pre></details>';
    if (s.plan) {
      html += block('plan ' + s.plan.step + ': prompt', s.plan.prompt, false) +
        block('plan ' + s.plan.step + ': answer', s.plan.answer, true);
    }
    (s.attempts || []).forEach(function (a, n) {
      var why = (s.rejections || [])[n];
      var reason = !why ? '' : ': ' + (why.unusable ||
        ('too similar to ' + why.similar_to + ' (' + why.similarity + ')'));
      html += block('asked again after ' + a.step + reason, a.answer, false);
    });
    if (s.answer !== null && s.answer !== undefined) { html += block('answer', s.answer, true, 'sv-answer'); }
    var code = s.k === null ? null : data.sources[s.k];
    html += code === null ? '<p class="note">kernel source not kept</p>' :
      block(s.synthetic ? 'answer text (no kernel found in it)' : 'kernel', code, true, 'sv-kernel');
    if (s.parent) {
      var parent = byStep[s.parent];
      var before = parent && parent.k !== null ? data.sources[parent.k] : null;
      html += '<details open class="sv-diff"><summary>diff from its parent ' + esc(s.parent) + '</summary>' +
        diffHtml(before, code) + '</details>';
    }
    html += '</div>';
    d.insertAdjacentHTML('beforeend', html);
    d.dataset.done = '1';
    var pd = d.querySelector('details.sv-prompt');
    if (pd) {
      pd.addEventListener('toggle', function () {
        var pre = pd.querySelector('pre');
        if (pd.open && !pre.textContent) { pre.textContent = p; }
      });
    }
  }
  // A line diff (longest common subsequence after the common ends), as a unified diff.
  function lineDiff(a, b) {
    var start = 0;
    while (start < a.length && start < b.length && a[start] === b[start]) { start++; }
    var ea = a.length, eb = b.length;
    while (ea > start && eb > start && a[ea - 1] === b[eb - 1]) { ea--; eb--; }
    var A = a.slice(start, ea), B = b.slice(start, eb), n = A.length, m = B.length, ops = [], i, j, k;
    if (n * m > 4000000) { return null; }
    var w = m + 1, L = new Int32Array((n + 1) * w);
    for (i = n - 1; i >= 0; i--) {
      for (j = m - 1; j >= 0; j--) {
        L[i * w + j] = A[i] === B[j] ? L[(i + 1) * w + j + 1] + 1 :
          Math.max(L[(i + 1) * w + j], L[i * w + j + 1]);
      }
    }
    for (k = 0; k < start; k++) { ops.push([' ', a[k]]); }
    i = 0; j = 0;
    while (i < n && j < m) {
      if (A[i] === B[j]) { ops.push([' ', A[i]]); i++; j++; }
      else if (L[(i + 1) * w + j] >= L[i * w + j + 1]) { ops.push(['-', A[i]]); i++; }
      else { ops.push(['+', B[j]]); j++; }
    }
    while (i < n) { ops.push(['-', A[i++]]); }
    while (j < m) { ops.push(['+', B[j++]]); }
    for (k = ea; k < a.length; k++) { ops.push([' ', a[k]]); }
    return ops;
  }
  function diffHtml(before, after) {
    if (before === null || before === undefined || after === null) {
      return '<p class="note">no diff: a source is not kept</p>';
    }
    var ops = lineDiff(before.split('\n'), after.split('\n'));
    if (ops === null) { return '<p class="note">no diff: the sources are too long to compare here</p>'; }
    var keep = new Uint8Array(ops.length), added = 0, removed = 0, k, c;
    for (k = 0; k < ops.length; k++) {
      if (ops[k][0] !== ' ') {
        if (ops[k][0] === '+') { added++; } else { removed++; }
        for (c = Math.max(0, k - 3); c <= Math.min(ops.length - 1, k + 3); c++) { keep[c] = 1; }
      }
    }
    if (!added && !removed) { return '<p class="note">identical to its parent</p>'; }
    var out = [], gap = true;
    for (k = 0; k < ops.length; k++) {
      if (!keep[k]) { gap = true; continue; }
      if (gap) { out.push('<span class="hunk">@@ line ' + (k + 1) + ' @@</span>'); gap = false; }
      var cls = ops[k][0] === '+' ? 'add' : ops[k][0] === '-' ? 'del' : '';
      var line = esc(ops[k][0] + ' ' + ops[k][1]);
      out.push(cls ? '<span class="' + cls + '">' + line + '</span>' : line + '\n');
    }
    return '<p class="note">+' + added + ' -' + removed + ' lines</p><pre class="sv-diff-text">' +
      out.join('') + '</pre>';
  }
  function seriesBox(d, series) {
    return Array.prototype.find.call(d.querySelectorAll('.sv-series'), function (b) {
      return b.dataset.series === series;
    });
  }
  function follow() {
    var m = /^#sample=([^/]*)\/([^/]*)\/(.*)$/.exec(location.hash);
    if (!m) { return; }
    var task = decodeURIComponent(m[1]), series = decodeURIComponent(m[2]), step = decodeURIComponent(m[3]);
    var i = INDEX.tasks.findIndex(function (t) { return t.task === task; });
    if (i < 0) { return; }
    if (filters.series && filters.series !== series) {
      filters.series = '';
      document.getElementById('sv-series').value = '';
      refresh();
    }
    var d = document.getElementById('sv-task-' + i);
    d.open = true;
    openTask(i, function () {
      var box = seriesBox(d, series);
      if (!box) { return; }
      var rows = loaded[i].series[series], k = rows.findIndex(function (r) { return r.step === step; });
      var el = box.querySelector('details.sv-sample[data-k="' + k + '"]');
      if (!el && (filters.status || filters.category)) {  // filtered out: show everything again
        filters.status = filters.category = '';
        document.getElementById('sv-status').value = document.getElementById('sv-category').value = '';
        refresh();
        box = seriesBox(d, series);
        el = box && box.querySelector('details.sv-sample[data-k="' + k + '"]');
      }
      if (!el) { return; }
      document.querySelectorAll('.sv-target').forEach(function (t) { t.classList.remove('sv-target'); });
      el.classList.add('sv-target');
      el.open = true;
      if (!el.dataset.done) { renderSample(el); }
      el.scrollIntoView({block: 'start'});
    });
  }
  buildFilters();
  buildTasks();
  refresh();
  window.addEventListener('hashchange', follow);
  follow();
  window.jaxbenchSamplesReady = performance.now();
})();
"""

__all__ = ["SAMPLE_CSS", "page_body", "sample_href", "sample_page", "section", "sidecar_dir",
           "write_samples"]
