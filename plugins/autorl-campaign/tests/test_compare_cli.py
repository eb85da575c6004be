"""``autorl compare`` through the real CLI (the command comes from the installed entry point)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from autorl.cli.main import cli

TABLES = ("cells", "submissions", "groups", "noise", "pass_at_k", "paired", "driver_effect")
TABLES += ("infra_errors",)
FIGURES = ("improvement", "scaling_time", "scaling_tokens", "scaling_cost")
FIGURES += ("scaling_submissions", "pass_at_k")


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["compare", *args], env={"COLUMNS": "200"})
    return result.exit_code, result.output


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_compare_prints_writes_and_exports(campaign_dir: Path) -> None:
    code, out = _run(str(campaign_dir))
    assert code == 0, out
    # the terminal tables carry the hand-checked numbers of test_analysis.py
    assert "group = agent · driver · task; every group has model=tiny" in out
    assert re.search(r"react · fake/a · gsm8k .*6\.00 \[4\.00, 8\.00\]", out)
    assert re.search(r"react · fake/b · gsm8k .*1\.00 \[0\.00, 2\.00\] .*2\.83 .* no ", out)
    assert "note: 2 of 13 cells are not completed and are left out (1 pending, 1 failed)" in out
    assert re.search(r"react · fake/a · gsm8k .*3 .*6\.00 .*7\.33 .*8\.00", out)  # pass@k
    assert "0.250" in out and "Driver effect within one scaffold" in out

    out_dir = campaign_dir / "compare"
    page = (out_dir / "index.html").read_text(encoding="utf-8")
    # self-contained: every figure inline, nothing fetched, no script
    assert page.count('src="data:image/png;base64,') == len(FIGURES)
    assert not re.search(r"(src|href)=\"(https?:)?//", page)
    assert "<script" not in page
    for stem in FIGURES:
        assert (out_dir / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # the CSV and the Parquet copy of a table hold the same rows
    for name in (*TABLES, "scaling"):
        csv = pd.read_csv(out_dir / f"{name}.csv")
        parquet = pd.read_parquet(out_dir / f"{name}.parquet")
        assert list(csv.columns) == list(parquet.columns), name
        assert len(csv) == len(parquet), name
    groups = pd.read_parquet(out_dir / "groups.parquet")
    assert groups["mean_improvement"].tolist() == [6.0, 1.0, 4.0, 6.0]
    cells = pd.read_parquet(out_dir / "cells.parquet")
    assert len(cells) == 13 and {"axis.seed", "config", "group", "clears_noise"} <= set(cells)
    assert cells.set_index("cell_id").loc["c04", "group"] == ""  # the failed cell: left out
    subs = pd.read_csv(out_dir / "submissions.csv")
    assert len(subs) == 14 and set(subs.columns) >= {"cell_id", "elapsed_s", "tokens_by_then"}


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_compare_options(campaign_dir: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "elsewhere"
    code, out = _run(
        str(campaign_dir),
        "--group-by",
        "agent",
        "--out",
        str(out_dir),
        "--resamples",
        "999",
        "--confidence",
        "0.9",
        "--comparable-only",
    )
    assert code == 0, out
    assert "90% CI" in out
    assert (out_dir / "index.html").is_file()
    assert not (campaign_dir / "compare").exists()
    assert pd.read_csv(out_dir / "groups.csv")["group"].tolist() == ["agent=react", "agent=codex"]

    code, out = _run(str(campaign_dir), "--baseline-group", "driver=fake/b")
    assert code == 0, out
    assert pd.read_csv(campaign_dir / "compare" / "paired.csv")["b"].nunique() == 1


def test_a_directory_that_is_not_a_campaign(tmp_path: Path) -> None:
    code, out = _run(str(tmp_path))
    assert code == 2
    assert f"error: {tmp_path} is not a campaign directory: campaign.sqlite is missing" in out
    assert "hint:" in out and "Traceback" not in out
    assert not (tmp_path / "compare").exists()


def test_a_store_that_is_not_sqlite(tmp_path: Path) -> None:
    (tmp_path / "campaign.sqlite").write_text("not a database, a note\n" * 100)
    code, out = _run(str(tmp_path))
    assert code == 2
    assert "cannot be read as a campaign store" in out and "Traceback" not in out


def test_bad_group_by_is_a_clear_error(campaign_dir: Path) -> None:
    code, out = _run(str(campaign_dir), "--group-by", "agent,seed")
    assert code == 2
    assert "error: --group-by seed: not a factor of this campaign" in out
    assert "choose among agent, driver, task, model" in out


@pytest.mark.slow  # over 1.5 CPU-s: make test, not make check
def test_one_cell(make_campaign: Callable[..., Path], fixture_cells: list) -> None:
    directory = make_campaign(fixture_cells[:1])
    code, out = _run(str(directory))
    assert code == 0, out
    assert "one run: no spread to put a CI on" in out
    assert "paired comparisons: no two groups share pairs" in out
    assert "driver effect: no scaffold was run with several drivers" in out
    assert (directory / "compare" / "index.html").is_file()


def test_nothing_completed_yet(make_campaign: Callable[..., Path], fixture_cells: list) -> None:
    directory = make_campaign([r for r in fixture_cells if r[1] != "completed"])
    code, out = _run(str(directory))
    assert code == 0, out
    assert "nothing to compare yet" in out
    page = (directory / "compare" / "index.html").read_text(encoding="utf-8")
    assert "nothing to compare yet" in page and "data:image/png" not in page


def test_help_lists_the_options() -> None:
    code, out = _run("--help")
    assert code == 0
    for option in ("--group-by", "--baseline-group", "--out", "--comparable-only", "--resamples"):
        assert option in out


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_the_docs_describe_every_exported_column(campaign_dir: Path) -> None:
    """docs/campaign-statistics.md has a section per exported table naming each column (the
    store's own columns of `cells` are documented in campaigns.md)."""
    from autorl_campaign.store import CELL_COLUMNS

    docs = Path(__file__).resolve().parents[3] / "docs" / "campaign-statistics.md"
    text = docs.read_text(encoding="utf-8")
    code, out = _run(str(campaign_dir))
    assert code == 0, out
    for name in (*TABLES, "scaling"):
        heading = f"### `{name}`"
        assert heading in text, f"{docs.name} lacks a section {heading}"
        section = text.split(heading, 1)[1].split("\n### ", 1)[0]
        columns = set(pd.read_csv(campaign_dir / "compare" / f"{name}.csv").columns)
        if name == "cells":
            columns = {"axis.<name>" if c.startswith("axis.") else c for c in columns}
            columns -= set(CELL_COLUMNS)
        if name == "groups":
            columns -= {"agent", "driver", "task", "model"}  # "one column per grouping factor"
        undocumented = sorted(c for c in columns if f"`{c}`" not in section)
        assert not undocumented, f"{heading} does not document {undocumented}"
