"""Prometheus metrics in the text exposition format (no client library needed).

``jaxbench_serve_queue_length``, ``jaxbench_serve_in_flight`` (gauges),
``jaxbench_serve_submissions_total{outcome}`` (``evaluate``, ``cached``, ``duplicate``),
``jaxbench_serve_verdicts_total{status}``, ``jaxbench_serve_refused_total{reason}`` (401, 413,
429, ...), ``jaxbench_serve_failures_total`` (harness errors after retries: no verdict), and
``jaxbench_serve_latency_seconds`` / ``jaxbench_serve_evaluation_seconds`` (summaries: the
0.5, 0.9 and 0.99 quantiles over the last 1000 evaluations, plus ``_sum`` and ``_count``).
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Iterable

QUANTILES = (0.5, 0.9, 0.99)
WINDOW = 1000


def quantile(values: Iterable[float], q: float) -> float | None:
    """The ``q`` quantile (nearest rank) of ``values``; None when there are none."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = min(len(ordered) - 1, max(0, int(round(q * len(ordered) + 0.5)) - 1))
    return ordered[rank]


class _Summary:
    def __init__(self) -> None:
        self.recent: deque[float] = deque(maxlen=WINDOW)
        self.total = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.recent.append(value)
        self.total += value
        self.count += 1


class Metrics:
    """Counters and summaries; gauges are read from the service when scraped."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.submissions: Counter[str] = Counter()
        self.verdicts: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()
        self.failures = 0
        self.latency = _Summary()  # submitted -> verdict
        self.evaluation = _Summary()  # the evaluation itself

    def submitted(self, outcome: str, count: int = 1) -> None:
        with self._lock:
            self.submissions[outcome] += count

    def verdict(self, status: str, latency_s: float | None, evaluation_s: float | None) -> None:
        with self._lock:
            self.verdicts[status] += 1
            if latency_s is not None:
                self.latency.observe(latency_s)
            if evaluation_s is not None:
                self.evaluation.observe(evaluation_s)

    def refusal(self, reason: str) -> None:
        with self._lock:
            self.refused[reason] += 1

    def failure(self) -> None:
        with self._lock:
            self.failures += 1

    def latency_quantiles(self) -> dict[str, float | None]:
        with self._lock:
            recent = list(self.latency.recent)
        return {f"p{int(q * 100)}": quantile(recent, q) for q in QUANTILES}

    def render(self, gauges: dict[str, float], info: dict[str, str] | None = None) -> str:
        lines: list[str] = []

        def family(name: str, kind: str, doc: str) -> None:
            lines.append(f"# HELP {name} {doc}")
            lines.append(f"# TYPE {name} {kind}")

        def label(value: str) -> str:
            return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

        with self._lock:
            if info:
                family("jaxbench_serve_info", "gauge", "The service's settings.")
                labels = ",".join(f'{k}="{label(v)}"' for k, v in sorted(info.items()))
                lines.append(f"jaxbench_serve_info{{{labels}}} 1")
            for name, value in sorted(gauges.items()):
                family(f"jaxbench_serve_{name}", "gauge", name.replace("_", " ") + ".")
                lines.append(f"jaxbench_serve_{name} {value:g}")
            counters: list[tuple[str, str, str, Counter[str]]] = [
                ("submissions_total", "outcome", "Accepted submissions by outcome.",
                 self.submissions),
                ("verdicts_total", "status", "Evaluations by verdict (cache answers not counted).",
                 self.verdicts),
                ("refused_total", "reason", "Refused requests by HTTP status.", self.refused),
            ]
            for name, key, doc, values in counters:
                family(f"jaxbench_serve_{name}", "counter", doc)
                for value_name, count in sorted(values.items()):
                    lines.append(f'jaxbench_serve_{name}{{{key}="{label(value_name)}"}} {count}')
            family("jaxbench_serve_failures_total", "counter",
                   "Submissions that ended without a verdict (harness errors after retries).")
            lines.append(f"jaxbench_serve_failures_total {self.failures}")
            for name, summary, doc in (
                    ("latency_seconds", self.latency, "Submission to verdict, seconds."),
                    ("evaluation_seconds", self.evaluation, "One evaluation, seconds.")):
                family(f"jaxbench_serve_{name}", "summary", doc)
                recent = list(summary.recent)
                for q in QUANTILES:
                    value = quantile(recent, q)
                    shown = "NaN" if value is None else f"{value:.6g}"
                    lines.append(f'jaxbench_serve_{name}{{quantile="{q:g}"}} {shown}')
                lines.append(f"jaxbench_serve_{name}_sum {summary.total:.6g}")
                lines.append(f"jaxbench_serve_{name}_count {summary.count}")
        return "\n".join(lines) + "\n"


__all__ = ["QUANTILES", "Metrics", "quantile"]
