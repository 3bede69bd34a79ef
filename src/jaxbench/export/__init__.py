"""Exports, one file per format:

- ``tables.py``: a run's evaluations as Parquet, JSONL or CSV, one row per evaluation with
  the same versioned columns for every suite and method (``jaxbench export``);
- ``sakana.py``: the same evaluations as Sakana-archive records, JSON or Parquet per level;
- ``shinka.py``: tasks as ShinkaEvolve task folders (``jaxbench export-tasks``).
"""

from __future__ import annotations

from typing import Any

from jaxbench.export.sakana import DEFAULT_JSON as SAKANA_JSON
from jaxbench.export.sakana import DEFAULT_PARQUET_DIR as SAKANA_PARQUET_DIR
from jaxbench.export.sakana import write_json as write_sakana_json
from jaxbench.export.sakana import write_parquet as write_sakana_parquet
from jaxbench.export.tables import (
    COLUMN_NAMES,
    COLUMNS,
    FORMATS,
    SCHEMA_VERSION,
    arrow_schema,
    rows,
    write,
)


def __getattr__(name: str) -> Any:  # PEP 562: the ShinkaEvolve export imports the task registry
    if name in ("ExportError", "export_task", "export_tasks"):
        from jaxbench.export import shinka

        return getattr(shinka, name)
    raise AttributeError(f"module 'jaxbench.export' has no attribute {name!r}")


__all__ = ["COLUMNS", "COLUMN_NAMES", "FORMATS", "SAKANA_JSON", "SAKANA_PARQUET_DIR", "SCHEMA_VERSION",
           "ExportError", "arrow_schema", "export_task", "export_tasks", "rows", "write",
           "write_sakana_json", "write_sakana_parquet"]
