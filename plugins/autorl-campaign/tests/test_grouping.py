"""Group labels: a factor another one determines (a driver zipped with its agent, a task's
options with the task) is left out of labels and does not make two stacks 'differ in two'."""

from __future__ import annotations

from pathlib import Path

from autorl_campaign.analysis import Options, compare_campaign
from autorl_campaign.grouping import shorten
from autorl_campaign.store import CampaignStore


def test_zipped_factors_follow_their_leader(tmp_path: Path) -> None:
    store = CampaignStore(tmp_path)
    rows, n = [], 0
    for agent, driver in (("scripted", None), ("react", "scripted//a/very/long/path/react.yaml")):
        for task, options in (("gsm8k", {"eval_size": 4}), ("humaneval", {})):
            for seed in (0, 1):
                config = {"task": task, "agent": agent, "driver": driver, "model": "tiny"}
                axes = {
                    "agent": agent,
                    "driver": driver,
                    "task": task,
                    "task_options": options,
                    "seed": seed,
                }
                rows.append(
                    {
                        "cell_id": f"c{n}",
                        "position": n,
                        "replicate": 0,
                        "axes": axes,
                        "config": {**config, "seed": seed},
                    }
                )
                n += 1
    store.add_cells(rows)
    for i, row in enumerate(rows):
        store.start(row["cell_id"], f"r{i}", tmp_path / f"r{i}")
        store.finish(
            row["cell_id"],
            status="completed",
            results={"baseline": 10.0, "best": 10.0 + i, "improvement": float(i)},
        )
    comparison = compare_campaign(store, Options(n_resamples=99))
    labels = [comparison.short(g) for g in comparison.groups]
    assert labels == [
        "scripted · gsm8k",
        "scripted · humaneval",
        "react · gsm8k",
        "react · humaneval",
    ]
    legend = comparison.legend()
    assert "group = agent · task" in legend and "driver follows agent" in legend
    assert "task_options follows task" in legend
    paired = comparison.tables["paired"]
    assert set(paired["differs_in"]) == {"agent"}  # never "agent,driver" (pairs share a task)
    store.close()


def test_long_values_keep_what_tells_them_apart() -> None:
    assert shorten("scripted//work/main/examples/react_tiny.yaml") == "scripted/react_tiny.yaml"
    assert shorten("openai/gpt-5.2") == "openai/gpt-5.2"
    assert shorten('{"eval_size": 4, "train_size": 20, "x": "a/b/c"}').startswith("{")
