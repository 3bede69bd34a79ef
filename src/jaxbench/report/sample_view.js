// The sample view of jaxbench's HTML report (jaxbench.report.sample_view): reads the page's
// index, builds the filters and the task entries, loads a task's file with a <script> element
// when it is opened (fetch() is refused on file://), renders a sample's details when it is
// opened, and follows #sample= links. Inlined into NAME.samples.html as it is.
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
