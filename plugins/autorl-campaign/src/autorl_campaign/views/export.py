"""CSV and Parquet copies of the store's tables and of every statistics table.

CSV for spreadsheets and quick looks, Parquet (pyarrow) for pandas/polars/DuckDB with the
column types kept. Both files of a table hold the same rows.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from autorl_campaign.analysis import Comparison


def _arrow_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Text for object columns that mix types (an axis that is a number in one cell and a word
    in another): Parquet needs one type per column."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype != object:
            continue
        kinds = {type(v) for v in out[column] if v is not None and v == v}
        if len(kinds) > 1:
            out[column] = [None if v is None or v != v else str(v) for v in out[column]]
    return out


def tables_of(comparison: Comparison) -> dict[str, pd.DataFrame]:
    """Every exported table by file stem: the store's cells and submissions, then statistics."""
    return {"cells": comparison.cells, "submissions": comparison.submissions, **comparison.tables}


def _csv_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Text cells inert for a spreadsheet (:func:`autorl.text.csv_text`): a failure reason or a
    model path is the agent's text, and ``=HYPERLINK(...)`` must not become a formula."""
    from autorl.text import csv_text

    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column]):
            out[column] = [csv_text(v, None) if isinstance(v, str) else v for v in out[column]]
    return out


def write_tables(comparison: Comparison, out_dir: Path) -> list[Path]:
    """Write ``<name>.csv`` and ``<name>.parquet`` for every table; returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in tables_of(comparison).items():
        csv_path, parquet_path = out_dir / f"{name}.csv", out_dir / f"{name}.parquet"
        _csv_safe(frame).to_csv(csv_path, index=False)
        _arrow_safe(frame).to_parquet(parquet_path, index=False, engine="pyarrow")
        written += [csv_path, parquet_path]
    return written
