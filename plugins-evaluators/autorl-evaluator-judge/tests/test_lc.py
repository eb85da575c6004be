"""The length-controlled win rate (AlpacaEval's GLM) on hand-made annotations.

Worked example: 40 instructions, the model wins 10 (raw win rate 25 %). The GLM offline is
``preference ~ tanh(standardised length difference) + intercept``; its prediction at length
difference 0 is the length-controlled win rate.

- Length differences that carry no information (every instruction has a twin with the same
  preference and the opposite difference): the fitted length weight is 0 by symmetry, so the
  prediction is logistic(intercept) = the mean preference, and LC = raw = 25 %.
- The model's wins are exactly its longer answers: length explains the wins, so at equal length
  the model would win less: LC < raw.
- The model's wins are its shorter answers: LC > raw.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from autorl_evaluator_judge.lc import WinRateError, length_controlled_winrate

N = 40
PREFS = [2.0 if (i // 2) % 4 == 0 else 1.0 for i in range(N)]  # 10 model wins of 40


def annotations(prefs: list[float], ref_len: list[int], model_len: list[int]) -> list[dict]:
    return [
        {
            "instruction": f"instruction {i}",
            "output_1": "r" * r,
            "output_2": "m" * m,
            "generator_1": "reference",
            "generator_2": "model",
            "annotator": "test",
            "preference": p,
            "index": i,
        }
        for i, (p, r, m) in enumerate(zip(prefs, ref_len, model_len, strict=True))
    ]


def lc(rows: list[dict], tmp_path: Path, **kwargs) -> dict:
    return length_controlled_winrate(rows, work_dir=tmp_path / "glm", **kwargs)


def test_uninformative_lengths_leave_the_raw_rate(tmp_path: Path) -> None:
    model_len = [100 + (30 if i % 2 else -30) for i in range(N)]
    out = lc(annotations(PREFS, [100] * N, model_len), tmp_path)
    assert out["win_rate"] == pytest.approx(25.0)
    assert out["n_wins"] == 10 and out["n_wins_base"] == 30 and out["n_total"] == N
    assert out["length_controlled_winrate"] == pytest.approx(25.0, abs=0.5)
    assert out["standard_error"] == pytest.approx(100 * math.sqrt(0.25 * 0.75 / (N - 1)), rel=1e-6)
    assert out["glm"] == "length_controlled_minimal"


def test_equal_lengths_give_the_raw_rate(tmp_path: Path) -> None:
    """Every answer as long as its reference: no length difference to control for (upstream's
    standardisation would divide 0 by 0), so LC = raw."""
    out = lc(annotations(PREFS, [100] * N, [100] * N), tmp_path)
    assert out["length_controlled_winrate"] == out["win_rate"] == pytest.approx(25.0)
    assert out["lc_standard_error"] == out["standard_error"]
    assert "length" in out["lc_fallback"]


@pytest.mark.parametrize(("pref", "rate"), [(1.0, 0.0), (2.0, 100.0)])
def test_a_model_that_always_loses_or_wins_keeps_its_raw_rate(
    tmp_path: Path, pref: float, rate: float
) -> None:
    """Upstream's fit collapses to 50 % when every preference is the same; a model that loses
    every comparison must not score like the references."""
    out = lc(annotations([pref] * N, [100] * N, [50 + 5 * i for i in range(N)]), tmp_path)
    assert out["length_controlled_winrate"] == out["win_rate"] == pytest.approx(rate)
    assert out["lc_fallback"] is not None


def test_wins_by_longer_answers_are_discounted(tmp_path: Path) -> None:
    model_len = [300 if p == 2.0 else 60 for p in PREFS]
    out = lc(annotations(PREFS, [100] * N, model_len), tmp_path)
    assert out["win_rate"] == pytest.approx(25.0)
    assert out["length_controlled_winrate"] < out["win_rate"] - 10
    assert out["lc_extreme_change"] is True


def test_wins_by_shorter_answers_count_more(tmp_path: Path) -> None:
    model_len = [30 if p == 2.0 else 200 for p in PREFS]
    out = lc(annotations(PREFS, [100] * N, model_len), tmp_path)
    assert out["length_controlled_winrate"] > out["win_rate"] + 10


def test_unusable_judgments_are_dropped_then_too_few_is_an_error(tmp_path: Path) -> None:
    prefs = [float("nan")] * 36 + [2.0, 1.0, 1.0, 2.0]
    with pytest.raises(WinRateError, match="only 4 usable judgment"):
        lc(annotations(prefs, [100] * N, [90 + i for i in range(N)]), tmp_path)


def test_the_reference_glm_needs_alpacaeval_data(tmp_path: Path) -> None:
    rows = annotations(PREFS, [100] * N, [100 + i for i in range(N)])
    with pytest.raises(WinRateError, match="instruction difficulties"):
        lc(rows, tmp_path, glm="length_controlled_v1")
    with pytest.raises(WinRateError, match=r"df_gamed\.csv"):
        lc(rows, tmp_path, glm="length_controlled_v1", glm_data_dir=tmp_path)


def test_no_network_and_no_tiktoken(tmp_path: Path) -> None:
    """The GLM's hub downloads are served locally; alpaca_eval's decoders never load."""
    import sys

    lc(annotations(PREFS, [100] * N, [100 + i for i in range(N)]), tmp_path)
    assert "tiktoken" not in sys.modules
    assert "alpaca_eval.decoders" not in sys.modules
    assert "alpaca_eval.main" not in sys.modules


def test_the_reference_glm_runs_on_local_alpacaeval_files(tmp_path: Path) -> None:
    """``length_controlled_v1`` (AlpacaEval 2.0's GLM) with files in AlpacaEval's layout: a
    per-instruction difficulty and annotations of two length-gamed baselines (hand-made here;
    the real ones come from the hub data set tatsu-lab/alpaca_eval)."""
    import pandas as pd

    data = tmp_path / "alpacaeval"
    data.mkdir()
    difficulty = [(-1.0 + 2.0 * i / (N - 1)) for i in range(N)]
    pd.Series(difficulty, name="instruction_difficulty").to_csv(data / "instruction_difficulty.csv")
    gamed = []
    for model, delta, win in (("verbose", -1.5, 0.7), ("concise", 1.5, 0.3)):
        for i in range(N):
            gamed.append(
                {
                    "model": model,
                    "index": i,
                    "instruction_difficulty": difficulty[i],
                    "preference": win if i % 2 else 1 - win,
                    "std_delta_len": delta,
                    "not_gamed_baseline": False,
                }
            )
    pd.DataFrame(gamed).to_csv(data / "df_gamed.csv", index=False)
    model_len = [100 + (30 if i % 2 else -30) for i in range(N)]
    out = lc(
        annotations(PREFS, [100] * N, model_len),
        tmp_path,
        glm="length_controlled_v1",
        glm_data_dir=data,
    )
    assert out["glm"] == "length_controlled_v1"
    assert out["win_rate"] == pytest.approx(25.0)
    assert 0.0 < out["length_controlled_winrate"] < 100.0
