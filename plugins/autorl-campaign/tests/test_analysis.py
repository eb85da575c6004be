"""The campaign-level tables on the fixed store of conftest.py, checked against hand arithmetic."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from autorl_campaign.analysis import Options, compare_campaign
from autorl_campaign.store import open_store

from autorl.errors import AutorlError

G1 = "agent=react,driver=fake/a,task=gsm8k,model=tiny"
G2 = "agent=react,driver=fake/b,task=gsm8k,model=tiny"
G3 = "agent=codex,driver=fake/a,task=gsm8k,model=tiny"
G4 = "agent=react,driver=fake/a,task=humaneval,model=tiny"
FLOOR_GSM8K = 2 * math.sqrt(2) * 1.0  # evaluator SE 1, one baseline evaluation
FLOOR_HUMANEVAL = 2 * math.sqrt(2) * 2.0  # no SE; baselines 20, 22, 24 have SD 2


def _compare(directory: Path, **options: object):
    store = open_store(directory, must_exist=True)
    try:
        return compare_campaign(store, Options(**options))  # type: ignore[arg-type]
    finally:
        store.close()


def _row(table: pd.DataFrame, **match: object) -> pd.Series:
    rows = table
    for key, value in match.items():
        rows = rows[rows[key] == value]
    assert len(rows) == 1, f"{match}: {len(rows)} rows"
    return rows.iloc[0]


def test_groups_table_by_hand(campaign_dir: Path) -> None:
    c = _compare(campaign_dir)
    groups = c.tables["groups"]
    assert groups["group"].tolist() == [G1, G2, G3, G4]  # campaign order
    assert groups["label"].tolist() == [
        "react · fake/a · gsm8k",
        "react · fake/b · gsm8k",
        "codex · fake/a · gsm8k",
        "react · fake/a · humaneval",
    ]
    assert c.legend() == "group = agent · driver · task; every group has model=tiny"

    g1 = _row(groups, group=G1)
    # best 44, 46, 48 -> 46; improvement 4, 6, 8 -> 6, CI [4, 8] (atoms of 1/27 at the ends)
    assert (g1.n, g1.mean_score, g1.score_low, g1.score_high) == (3, 46.0, 44.0, 48.0)
    assert (g1.mean_improvement, g1.improvement_low, g1.improvement_high) == (6.0, 4.0, 8.0)
    assert g1.noise_floor == pytest.approx(FLOOR_GSM8K)
    assert g1[["clears_noise", "ci_above_zero"]].tolist() == [True, True]  # 6 > 2.83; 4 > 0

    g2 = _row(groups, group=G2)
    # the seed-3 cell has no valid submission: best = baseline 40, improvement 0.
    # best (41 + 42 + 40) / 3 = 41; improvement (1 + 2 + 0) / 3 = 1 < 2.83: does not clear.
    assert (g2.n, g2.n_no_valid, g2.mean_score, g2.mean_improvement) == (3, 1, 41.0, 1.0)
    assert (g2.improvement_low, g2.improvement_high) == (0.0, 2.0)
    assert g2[["clears_noise", "ci_above_zero"]].tolist() == [False, False]

    g3 = _row(groups, group=G3)
    # two runs, improvement 3 and 5: mean 4; CI [3, 5] (each extreme atom holds 1/4)
    assert (g3.n, g3.n_incomparable, g3.mean_improvement) == (2, 1, 4.0)
    assert (g3.improvement_low, g3.improvement_high) == (3.0, 5.0)

    g4 = _row(groups, group=G4)
    # improvements 30-20, 24-22, 30-24 = 10, 2, 6 -> 6 > 5.657: clears the humaneval floor
    assert g4.mean_improvement == 6.0
    assert g4.noise_floor == pytest.approx(FLOOR_HUMANEVAL)
    assert g4[["clears_noise"]].tolist() == [True]


def test_notes_count_what_is_left_out(campaign_dir: Path) -> None:
    notes = _compare(campaign_dir).notes
    assert notes[0] == ("2 of 13 cells are not completed and are left out (1 pending, 1 failed)")
    assert any(n.startswith("1 cell(s) are not comparable") for n in notes)
    assert any(n.startswith("1 cell(s) have no score (no valid submission") for n in notes)


def test_noise_table(campaign_dir: Path) -> None:
    noise = _compare(campaign_dir).tables["noise"]
    gsm8k = _row(noise, task="gsm8k")
    # 8 completed gsm8k cells, all baseline 40 with SE 1 -> one evaluation, sigma 1
    assert (gsm8k.n_cells, gsm8k.eval_se, gsm8k.n_baselines, gsm8k.sigma) == (8, 1.0, 1, 1.0)
    assert math.isnan(gsm8k.baseline_sd)
    humaneval = _row(noise, task="humaneval")
    assert (humaneval.n_baselines, humaneval.baseline_sd, humaneval.sigma) == (3, 2.0, 2.0)
    assert math.isnan(humaneval.eval_se)
    assert humaneval.floor == pytest.approx(FLOOR_HUMANEVAL)


def test_pass_at_k_table(campaign_dir: Path) -> None:
    table = _compare(campaign_dir).tables["pass_at_k"]

    def curve(group: str) -> list[float]:
        return table[table["group"] == group]["expected_best_improvement"].tolist()

    # G1 (4, 6, 8): 6, (6 + 2*8)/3 = 22/3, 8.   G2 (0, 1, 2): 1, (1 + 2*2)/3 = 5/3, 2.
    # G3 (3, 5): 4, 5.   G4 (2, 6, 10): 6, (6 + 2*10)/3 = 26/3, 10.
    assert curve(G1) == pytest.approx([6, 22 / 3, 8])
    assert curve(G2) == pytest.approx([1, 5 / 3, 2])
    assert curve(G3) == pytest.approx([4, 5])
    assert curve(G4) == pytest.approx([6, 26 / 3, 10])


def test_paired_comparisons_of_groups_that_differ_in_one_factor(campaign_dir: Path) -> None:
    paired = _compare(campaign_dir).tables["paired"]
    # G1-G2 differ in driver; G1-G3 in agent; G1-G4 in task (no pairs: the task differs);
    # every other two groups differ in two factors.
    assert list(zip(paired["a"], paired["b"], strict=True)) == [(G1, G2), (G1, G3)]
    drivers = _row(paired, b=G2)
    # seeds 1-3: d = 4-1, 6-2, 8-0 = 3, 4, 8; mean 5, SD sqrt(7), p = 2/8
    assert (drivers.differs_in, drivers.n_pairs, drivers.mean_diff) == ("driver", 3, 5.0)
    assert drivers.d_z == pytest.approx(5 / math.sqrt(7))
    assert drivers.p_value == 0.25
    agents = _row(paired, b=G3)
    # seeds 1-2: d = 4-3, 6-5 = 1, 1; p = 2/4 = 0.5; SD 0 -> no d_z
    assert (agents.n_pairs, agents.mean_diff, agents.p_value) == (2, 1.0, 0.5)
    assert math.isnan(agents.d_z)
    # Benjamini-Hochberg of (0.25, 0.5): 0.25 * 2/1 = 0.5 and 0.5 * 2/2 = 0.5
    assert paired["q_value"].tolist() == [0.5, 0.5]


def test_driver_effect_within_react_on_gsm8k(campaign_dir: Path) -> None:
    table = _compare(campaign_dir).tables["driver_effect"]
    # only react on gsm8k ran two drivers: fake/a (mean 6, best) and fake/b (mean 1, worst)
    assert table["driver"].tolist() == ["fake/a", "fake/b"]
    assert set(table["scaffold"]) == {"agent=react,task=gsm8k,model=tiny"}
    # range 6 - 1 = 5; SD of (6, 1) = 5 / sqrt(2)
    assert table["spread_range"].tolist() == [5.0, 5.0]
    assert table["spread_sd"].iloc[0] == pytest.approx(5 / math.sqrt(2))
    best, worst = _row(table, driver="fake/a"), _row(table, driver="fake/b")
    assert best.is_best and worst.is_worst
    # fake/b vs the best: d = 1-4, 2-6, 0-8 = -3, -4, -8 -> mean -5, p 0.25; and the reverse
    assert (worst.vs_best_n_pairs, worst.vs_best_mean_diff, worst.vs_best_p_value) == (
        3,
        -5.0,
        0.25,
    )
    assert (best.vs_worst_mean_diff, best.vs_worst_p_value) == (5.0, 0.25)
    assert best.vs_best_note == "itself"


def test_scaling_curves_by_hand(campaign_dir: Path) -> None:
    scaling = _compare(campaign_dir, grid_points=7).tables["scaling"]

    def curve(axis: str, group: str) -> pd.DataFrame:
        return scaling[(scaling["axis"] == axis) & (scaling["group"] == group)]

    time = curve("time", G1)
    # grid 0, 50, ..., 300 (every run used 300 s; all submissions fall on the grid).
    #   seed 1: 42 at 100, 44 at 200 -> 0, 0, 2, 2, 4, 4, 4
    #   seed 2: 46 at 50 (failed at 300) -> 0, 6, 6, 6, 6, 6, 6
    #   seed 3: failed at 150, 48 at 250 -> 0, 0, 0, 0, 0, 8, 8
    assert time["x"].tolist() == [0, 50, 100, 150, 200, 250, 300]
    assert time["mean"].tolist() == pytest.approx([0, 2, 8 / 3, 8 / 3, 10 / 3, 6, 6])
    assert (time["n"].iloc[0], time["low"].iloc[0], time["high"].iloc[0]) == (3, 0.0, 0.0)
    assert (time["low"].iloc[-1], time["high"].iloc[-1]) == (4.0, 8.0)

    # submissions made: every cell made at most 2 -> grid 0, 1, 2
    #   seed 1: 0, 2, 4;  seed 2: 0, 6, 6;  seed 3: 0, 0, 8 -> mean 0, 8/3, 6
    assert curve("submissions", G1)["mean"].tolist() == pytest.approx([0, 8 / 3, 6])
    # G2: 41, 42, failed -> after one submission 1, 2, 0: mean 1
    assert curve("submissions", G2)["mean"].tolist() == pytest.approx([0, 1, 1])

    # tokens: only G1's runs were metered; grid 0..3000 by 500.
    #   at 1500: seed 1 reached 42 (at 1000) -> 2, seed 2 -> 6, seed 3 nothing valid yet -> 0
    tokens = curve("tokens", G1)
    assert set(scaling[scaling["axis"] == "tokens"]["group"]) == {G1}
    assert _row(tokens, x=1500.0)["mean"] == pytest.approx(8 / 3)
    assert _row(tokens, x=2500.0)["mean"] == pytest.approx(6)
    # dollars were spent in proportion to tokens (0.1 per 1000)
    cost = curve("cost", G1)
    assert cost["mean"].tolist() == pytest.approx(tokens["mean"].tolist())
    assert cost["x"].max() == pytest.approx(0.3)


def test_comparable_only_leaves_one_codex_run(campaign_dir: Path) -> None:
    c = _compare(campaign_dir, comparable_only=True)
    g3 = _row(c.tables["groups"], group=G3)
    assert (g3.n, g3.mean_improvement) == (1, 3.0)
    assert math.isnan(g3.improvement_low)
    assert "one run" in g3.note
    agents = _row(c.tables["paired"], b=G3)
    assert (agents.n_pairs, agents.p_value) == (1, 1.0)
    assert any("left out (--comparable-only)" in n for n in c.notes)


def test_group_by_agent_pools_drivers_and_tasks(campaign_dir: Path) -> None:
    c = _compare(campaign_dir, group_by=("agent",))
    groups = c.tables["groups"]
    assert groups["group"].tolist() == ["agent=react", "agent=codex"]
    react = _row(groups, group="agent=react")
    # 4+6+8 + 1+2+0 + 10+2+6 = 39 over 9 runs; the floor of a pooled group is its largest
    assert react.n == 9
    assert react.mean_improvement == pytest.approx(39 / 9)
    assert react.noise_floor == pytest.approx(FLOOR_HUMANEVAL)
    # pairs match the pooled factors too: codex/fake/a/gsm8k seeds 1-2 against react's same
    paired = c.tables["paired"]
    assert (paired["n_pairs"].tolist(), paired["mean_diff"].tolist()) == ([2], [1.0])
    assert c.tables["driver_effect"].empty  # the driver is not a grouping factor


def test_baseline_group_compares_everything_with_it(campaign_dir: Path) -> None:
    paired = _compare(campaign_dir, baseline_group="driver=fake/b").tables["paired"]
    # G1 vs G2: d 3, 4, 8; G3 vs G2 on seeds 1-2: d = 3-1, 5-2 = 2, 3 -> mean 2.5, p = 2/4;
    # G4 (humaneval) has no pair with G2 (gsm8k)
    assert list(zip(paired["a"], paired["b"], strict=True)) == [(G1, G2), (G3, G2)]
    assert _row(paired, a=G3)[["differs_in", "mean_diff", "p_value"]].tolist() == [
        "agent,driver",
        2.5,
        0.5,
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"group_by": ("seed",)}, "--group-by seed: not a factor of this campaign"),
        ({"group_by": ("agnet",)}, "--group-by agnet: not a factor"),
        ({"baseline_group": "agnet=react"}, "agnet is not a grouping factor"),
        ({"baseline_group": "agent=claude"}, "matches no group"),
        ({"baseline_group": "react"}, "'react' is not name=value"),
    ],
)
def test_bad_options_are_clear_errors(campaign_dir: Path, options: dict, message: str) -> None:
    with pytest.raises(AutorlError, match=message) as info:
        _compare(campaign_dir, **options)
    assert info.value.hint


def test_one_cell_campaign(make_campaign: Callable[..., Path], fixture_cells: list) -> None:
    # the first cell of the fixture: react, fake/a, gsm8k, seed 1, improvement 4
    c = _compare(make_campaign(fixture_cells[:1]))
    groups = c.tables["groups"]
    assert (groups["n"].tolist(), groups["mean_improvement"].tolist()) == ([1], [4.0])
    assert math.isnan(groups["improvement_low"].iloc[0])
    assert c.tables["pass_at_k"]["expected_best_improvement"].tolist() == [4.0]
    assert c.tables["paired"].empty and c.tables["driver_effect"].empty
    time = c.tables["scaling"][c.tables["scaling"]["axis"] == "time"]
    assert time["low"].isna().all()  # no band from one run
    assert time["mean"].iloc[-1] == 4.0
    assert c.notes == []


def test_campaign_with_nothing_completed(
    make_campaign: Callable[..., Path], fixture_cells: list
) -> None:
    failed_and_pending = [row for row in fixture_cells if row[1] in ("failed", "pending")]
    c = _compare(make_campaign(failed_and_pending))
    assert c.groups == []
    assert c.notes[-1] == "no completed cell with a baseline score: nothing to compare yet"
    assert all(t.empty for t in c.tables.values())
    assert c.cells["status"].tolist() == ["failed", "pending"]


def test_a_flagged_cell_is_named_counted_and_left_out_with_comparable_only(
    campaign_dir: Path,
) -> None:
    store = open_store(campaign_dir, must_exist=True)
    first = next(c for c in store.cells() if c["agent"] == "react" and c["seed"] == 3)
    store.finish(
        first["cell_id"],
        status="completed",
        results={**{k: first[k] for k in ("baseline", "best", "improvement")}, "flagged": 1},
    )
    store.close()
    c = _compare(campaign_dir)
    g1 = _row(c.tables["groups"], group=G1)
    assert (g1.n, g1.n_flagged, g1.mean_improvement) == (3, 1, 6.0)  # used, and counted
    assert any("flagged" in n and first["cell_id"] in n for n in c.notes)
    kept = _row(_compare(campaign_dir, comparable_only=True).tables["groups"], group=G1)
    # improvements 4, 6 without the flagged seed-3 cell (8)
    assert (kept.n, kept.n_flagged, kept.mean_improvement) == (2, 0, 5.0)


def test_a_store_from_before_the_analysis_columns_gains_them(tmp_path: Path) -> None:
    import sqlite3

    from autorl_campaign.store import CELL_COLUMNS

    older = {k: v for k, v in CELL_COLUMNS.items() if k not in ("flagged", "best_route")}
    db = sqlite3.connect(tmp_path / "campaign.sqlite")
    db.execute(f"CREATE TABLE cells ({', '.join(f'{k} {v}' for k, v in older.items())})")
    db.execute(
        "INSERT INTO cells (cell_id, position, replicate, axes, config, status) "
        "VALUES ('old', 0, 0, '{}', '{}', 'completed')"
    )
    db.commit()
    db.close()
    store = open_store(tmp_path, must_exist=True)
    assert [(c["cell_id"], c["flagged"], c["best_route"]) for c in store.cells()] == [
        ("old", None, None)
    ]
    store.close()
