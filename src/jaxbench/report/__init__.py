"""Reports derived from run directories (their events only): the summary table and JSON
(``summary.py``), the comparison of two runs (``compare.py``), the HTML report with charts
(``html.py``, needs the ``results`` extra), the samples of an agent run one by one
(``samples.py``; the HTML sample view, ``sample_view.py``), the failure taxonomy (``taxonomy.py``), the LLM
calls and evaluation time per method · target (``usage.py``), the metrics they use
(``metrics.py``: fast_p, fast_p@N, geomean) and the run reader they share (``data.py``)."""

from __future__ import annotations

from jaxbench.report.compare import compare, print_comparison, write_comparison_html
from jaxbench.report.data import RunData, load_run, task_order_key
from jaxbench.report.html import write_report
from jaxbench.report.samples import lineage_run, print_samples
from jaxbench.report.summary import print_summary, summarize

__all__ = ["RunData", "compare", "lineage_run", "load_run", "print_comparison", "print_samples",
           "print_summary", "summarize", "task_order_key", "write_comparison_html", "write_report"]
