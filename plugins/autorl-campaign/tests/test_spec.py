"""Campaign files: expansion (product, zip, exclude, include, replicates), deterministic cell
ids, clear errors, and the dry-run check that catches a typo before any cell runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from autorl_campaign.spec import cell_id, load_campaign
from autorl_campaign.validate import check_campaign, problems_text
from click.testing import CliRunner

from autorl.errors import ConfigError


def write(tmp_path: Path, text: str, name: str = "c.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


BASE = 'task = "gsm8k"\nmodel = "tiny"\ntask_options = { train_size = 20, eval_size = 4 }\n'
POOL = 'sandbox = "local"\n[campaign]\nexecutor = "pool"\nexecutor_options = { workers = 2 }\n'
"""A campaign on the local pool executor with two workers (the file's executor options)."""


def test_axes_expand_to_the_product_minus_exclude_plus_include(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        BASE
        + "[campaign]\nreplicates = 2\n"
        + 'exclude = [{ agent = "react", seed = 1 }]\n'
        + 'include = [{ agent = "scripted", seed = 9, "budget.wall_seconds" = 30 }]\n'
        + '[axes]\nagent = ["scripted", "react"]\nseed = [0, 1]\n',
    )
    camp = load_campaign(path)
    combos = [(c.axes.get("agent"), c.axes.get("seed"), c.replicate) for c in camp.cells]
    assert combos == [
        ("scripted", 0, 0),
        ("scripted", 0, 1),
        ("scripted", 1, 0),
        ("scripted", 1, 1),
        ("react", 0, 0),
        ("react", 0, 1),
        ("scripted", 9, 0),
        ("scripted", 9, 1),
    ]
    last = camp.cells[-1].config
    assert last["budget"]["wall_seconds"] == 30 and last["task_options"]["eval_size"] == 4
    assert last["labels"] == {"campaign": "c", "cell": camp.cells[-1].cell_id}
    assert "runs_dir" not in last and "run_id" not in last
    assert camp.out_dir == Path("campaigns/c")


def test_zipped_axes_vary_together(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        BASE
        + '[campaign]\nzip = [["agent", "driver"]]\n'
        + '[axes]\nagent = ["react", "codex"]\ndriver = ["scripted/a.yaml", "openai/gpt-5.2"]\n'
        + "seed = [0, 1]\n",
    )
    pairs = {(c.axes["agent"], c.axes["driver"]) for c in load_campaign(path).cells}
    assert pairs == {("react", "scripted/a.yaml"), ("codex", "openai/gpt-5.2")}
    assert len(load_campaign(path).cells) == 4


def test_cell_ids_are_deterministic_and_follow_the_config(tmp_path: Path) -> None:
    text = BASE + "[axes]\nseed = [0, 1]\n"
    first = [c.cell_id for c in load_campaign(write(tmp_path, text)).cells]
    again = [c.cell_id for c in load_campaign(write(tmp_path, text, "other.toml")).cells]
    assert first != again  # the campaign name (file stem) is part of the config's labels
    assert first == [c.cell_id for c in load_campaign(write(tmp_path, text)).cells]
    changed = [c.cell_id for c in load_campaign(write(tmp_path, text.replace("4", "5"))).cells]
    assert set(changed).isdisjoint(first)  # an edited option names new cells
    config = load_campaign(write(tmp_path, text)).cells[0].config
    assert cell_id({**config, "labels": {"campaign": "c"}}, 0) == first[0]


def test_yaml_files_and_a_repeated_cell_is_run_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "task: gsm8k\nmodel: tiny\naxes:\n  seed: [0, 0, 1]\n",
        "c.yaml",
    )
    camp = load_campaign(path)
    assert [c.axes["seed"] for c in camp.cells] == [0, 1]
    assert camp.notes and "same run as cell 1" in camp.notes[0]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            "[campaign]\nexecuter = 'pool'\n",
            r"unknown key 'executer' \(did you mean 'executor'\?\)",
        ),
        ("[axes]\nagnet = ['react']\n", r"'agnet' is not a run option \(did you mean 'agent'\?\)"),
        ("[axes]\nagent = []\n", "must be a non-empty list"),
        ("[axes]\nrun_id = ['a']\n", "the campaign sets it for each cell"),
        ("run_id = 'x'\n", "is set per cell by the campaign"),
        ("[axes]\nbudget = [{}]\n'budget.wall_seconds' = [1]\n", "set the same option"),
        ("[campaign]\nzip = [['seed', 'agent']]\n[axes]\nseed = [0]\n", "'agent', which is not"),
        (
            "[campaign]\nzip = [['seed', 'agent']]\n[axes]\nseed = [0, 1]\nagent = ['react']\n",
            "the same number of values",
        ),
        ("[campaign]\nexclude = [{ task = 'x' }]\n[axes]\nseed = [0]\n", "'task', which is not"),
        ("[campaign]\nexclude = [{ seed = 0 }]\n[axes]\nseed = [0]\n", "no cells left"),
        ("[campaign]\nreplicates = 0\n", "replicates must be a whole number >= 1"),
        ("[axes]\nseed = ['zero']\n", r"cell 1 of 1 \(seed=zero\) is invalid"),
        ("budjet = { wall_seconds = 60 }\n", r"unknown top-level key 'budjet' \(did you mean"),
        ("[axis]\nseed = [0]\n", r"unknown top-level key 'axis' \(did you mean 'axes'\?\)"),
    ],
)
def test_bad_campaign_files_say_what_and_where(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        load_campaign(write(tmp_path, BASE + text))


def test_an_option_given_on_the_command_line_cannot_override_an_axis(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + '[axes]\nmodel = ["tiny", "smollm2-135m"]\n')
    with pytest.raises(ConfigError, match="overrides the axis 'model'") as err:
        load_campaign(path, overrides={"model": "tiny"})
    assert "remove the axis" in (err.value.hint or "")
    path = write(tmp_path, BASE + '[axes]\n"budget.wall_seconds" = [60, 120]\n')
    with pytest.raises(ConfigError, match=r"overrides the axis 'budget\.wall_seconds'"):
        load_campaign(path, overrides={"budget": {"wall_seconds": 5}})
    camp = load_campaign(path, overrides={"budget.max_submissions": 3})  # another option: fine
    assert {c.config["budget"]["max_submissions"] for c in camp.cells} == {3}


def test_dry_run_catches_a_typo_in_the_last_of_16_cells(tmp_path: Path) -> None:
    """Acceptance: the typo is named with its cell before any cell runs."""
    path = write(
        tmp_path,
        'task = "gsm8k"\nmodel = "tiny"\nsandbox = "local"\n'
        '[campaign]\ninclude = [{ seed = 99, "task_options.eval_sise" = 4 }]\n'
        "[axes]\nseed = [0, 1, 2, 3, 4]\n"
        '"budget.wall_seconds" = [60, 120, 180]\n',
    )
    camp = load_campaign(path)
    assert len(camp.cells) == 16
    found = check_campaign(camp)
    assert [(cell.position, message) for cell, (message, _) in found] == [
        (15, "task 'gsm8k': unknown option 'eval_sise' (did you mean 'eval_size'?)")
    ]
    text = problems_text(camp, found)
    assert "in cell 16 of 16 (seed=99, task_options.eval_sise=4)" in text
    assert camp.cells[15].cell_id in text


def test_dry_run_checks_each_cells_agent_options_and_device_as_autorl_run_does(
    tmp_path: Path,
) -> None:
    """The same names in every cell, options that differ: each cell's agent options (the
    scripted agent's recipe flags) and device are checked, not only the first cell's."""
    path = write(
        tmp_path,
        BASE + 'sandbox = "local"\n[axes]\n"agent_options.rounds" = [1, 2]\n'
        '[campaign]\ninclude = [{ "agent_options.rnds" = 2 }, { device = "gpu" }]\n',
    )
    camp = load_campaign(path)
    messages = [message for _, (message, _) in check_campaign(camp)]
    assert len(messages) == 2, messages
    assert "has no option 'rnds' (did you mean 'rounds'?)" in messages[0]
    assert "device 'gpu' is not auto, cpu, cuda or cuda:N" in messages[1]


def test_dry_run_command_prints_the_plan_and_runs_nothing(tmp_path: Path) -> None:
    from autorl_campaign.cli import campaign

    path = write(tmp_path, BASE + POOL + "[axes]\nseed = [0, 1, 2]\n")
    out = tmp_path / "camp"
    result = CliRunner().invoke(campaign, ["run", str(path), "--dry-run", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "campaign c: 3 cells" in result.output and "on 2 workers" in result.output
    assert "nothing was run" in result.output and not out.exists()
    bad = write(tmp_path, BASE + '[axes]\nagent = ["scripted", "reactt"]\n', "bad.toml")
    result = CliRunner().invoke(campaign, ["run", str(bad), "--dry-run", "--out", str(out)])
    assert result.exit_code != 0
    assert "unknown agent 'reactt'" in str(result.exception or result.output)
    assert not out.exists()


def test_executor_options_are_checked_before_anything_is_written(tmp_path: Path) -> None:
    from autorl_campaign.cli import campaign

    path = write(tmp_path, BASE + POOL + "[axes]\nseed = [0, 1]\n")
    out = tmp_path / "camp"
    bad = ["run", str(path), "--out", str(out), "--executor-option", "wokers=3"]
    result = CliRunner().invoke(campaign, bad)
    assert "unknown option(s) wokers" in str(result.exception) and not out.exists()
    # another executor drops the file's options (they were the pool's)
    ok = ["run", str(path), "--dry-run", "--out", str(out), "--executor", "local"]
    result = CliRunner().invoke(campaign, ok)
    assert result.exit_code == 0, result.output
    assert "executor local" in result.output and not out.exists()


def test_a_cell_holds_gpus_for_its_agent_and_apart_for_its_grader(tmp_path: Path) -> None:
    """A cell's slot counts the agent's and the grader's GPUs; its job gives the first to the
    agent's sandbox and the rest to the grader; a cell whose agent holds GPUs and whose grader
    holds none is refused unless it evaluates on the CPU."""
    from autorl_campaign.cellrun import assign_gpus

    text = BASE + "[campaign]\ngpus_per_cell = 2\ngrader_gpus_per_cell = 1\n[axes]\nseed = [0]\n"
    cell = load_campaign(write(tmp_path, text)).cells[0]
    assert (cell.slot.gpus, cell.grader_gpus) == (3, 1)
    config: dict = {"limits": {"cpus": 1}}
    env: dict[str, str] = {}
    assign_gpus(config, env, (4, 5, 6), cell.grader_gpus)
    assert config["limits"] == {"cpus": 1, "gpus": [4, 5]} and config["grader"] == {"gpus": [6]}
    assert env["CUDA_VISIBLE_DEVICES"] == "4,5,6"
    alone = BASE + "[campaign]\ngpus_per_cell = 1\n[axes]\nseed = [0]\n"
    with pytest.raises(ConfigError, match="its grader none") as err:
        load_campaign(write(tmp_path, alone, "alone.toml"))
    assert "grader_gpus_per_cell" in (err.value.hint or "")
    on_cpu = load_campaign(write(tmp_path, 'device = "cpu"\n' + alone, "cpu.toml")).cells[0]
    assert (on_cpu.slot.gpus, on_cpu.grader_gpus) == (1, 0)
