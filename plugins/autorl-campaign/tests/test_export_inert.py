"""The campaign's CSV exports keep agent text inert: a reason that looks like a formula is
text in a spreadsheet, a number stays a number (issue #30, item 7)."""

from __future__ import annotations

import csv
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
from autorl_campaign.views.export import write_tables


def test_formulas_and_escapes_in_agent_text_are_inert(tmp_path: Path) -> None:
    cells = pd.DataFrame(
        {
            "reason": ['=HYPERLINK("http://x","click")', "@SUM(A1)", "ok\x1b]0;evil\x07"],
            "score": [-1.5, 2.0, 3.0],
            "model_path": ["-1.5", "+cmd", "output/v1"],
        }
    )
    comparison = SimpleNamespace(cells=cells, submissions=cells.iloc[:0], tables={})
    write_tables(comparison, tmp_path)
    rows = list(csv.DictReader((tmp_path / "cells.csv").open()))
    assert [r["reason"] for r in rows] == ['\'=HYPERLINK("http://x","click")', "'@SUM(A1)", "ok"]
    assert [r["model_path"] for r in rows] == ["-1.5", "'+cmd", "output/v1"]
    assert [r["score"] for r in rows] == ["-1.5", "2.0", "3.0"]
    assert pd.read_parquet(tmp_path / "cells.parquet")["score"].tolist() == [-1.5, 2.0, 3.0]
