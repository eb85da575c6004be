"""``autorl run`` as a user meets it (issue #34): every option checked before anything runs and
no run directory for a refused run, errors without pydantic internals that name the file a value
came from, Ctrl-C answered with exit 130 and the command that finishes the run, and output that
is not wrapped when it goes to a file or a pipe."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autorl import hookimpl
from autorl.config import RunConfig
from autorl.errors import ConfigError
from autorl.registry import Registry
from autorl.specs import TaskSpec

AUTORL = str(Path(sys.executable).parent / "autorl")


def autorl(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AUTORL, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def refused(flags: list[str], needle: str, *marks: pytest.MarkDecorator) -> object:
    return pytest.param(flags, needle, id=" ".join(flags), marks=marks)


REFUSED = [
    refused(["--device", "gpu"], "device 'gpu' is not auto, cpu, cuda or cuda:N"),
    # imports torch to ask it: over 2 CPU-s, so make test only
    refused(["--device", "cuda:7"], "torch sees", pytest.mark.slow),
    refused(["--agent-option", "bogus=1"], "the recipe of task 'gsm8k' has no option 'bogus'"),
    refused(["--agent-option", "rnds=2"], "did you mean 'rounds'?"),
    refused(["--task-option", "train_sizee=3"], "did you mean 'train_size'?"),
    refused(["--evaluator-option", "nope=1"], "unknown option(s) nope"),
]


@pytest.mark.parametrize(("flags", "needle"), REFUSED)
def test_a_bad_option_is_refused_before_anything_runs(
    tmp_path: Path, flags: list[str], needle: str
) -> None:
    runs = tmp_path / "runs"
    done = autorl(
        "run", "--task", "gsm8k", "--model", "tiny", "--runs-dir", str(runs), *flags, cwd=tmp_path
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert needle in done.stderr and "Traceback" not in done.stderr
    assert "baseline" not in done.stdout  # nothing was evaluated
    assert not runs.exists() or list(runs.iterdir()) == []  # and no run directory is left


CONFIGS = [
    (
        "budjet.toml",
        "[budjet]\nwall_seconds = 30\n",
        ["budjet: unknown key (did you mean 'budget'?)"],
    ),
    ("gpu.toml", "[limits]\ngpu = [0]\n", ["limits.gpu: unknown key (did you mean 'gpus'?)"]),
    (
        "memory.toml",
        '[limits]\nmemory_gb = "lots"\n',
        ["limits.memory_gb: expected a valid number, or 'auto' or 'none' (got 'lots')"],
    ),
    ("sandbox.yaml", "sandbox: isolatd\n", ["unknown sandbox 'isolatd' (sandbox from config file"]),
    (
        "agent.yaml",
        "task: gsm8k\nmodel: tiny\nagent_options:\n  bogus: 1\n",
        ["no option 'bogus' (agent_options from config file"],
    ),
]


@pytest.mark.parametrize(("name", "text", "needles"), CONFIGS, ids=[c[0] for c in CONFIGS])
def test_config_mistakes_are_named_with_their_file_and_no_pydantic_internals(
    tmp_path: Path, name: str, text: str, needles: list[str]
) -> None:
    (tmp_path / name).write_text(text)
    done = autorl("run", "--config", name, "--runs-dir", str(tmp_path / "runs"), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    for needle in needles:
        assert needle in done.stderr, done.stderr
    assert name in done.stderr
    for internal in (
        "literal[",
        "Extra inputs are not permitted",
        "extra_forbidden",
        "Input should",
    ):
        assert internal not in done.stderr
    assert not (tmp_path / "runs").exists()


class NoRecipePlugin:
    @hookimpl
    def autorl_register_tasks(self) -> list[TaskSpec]:
        return [
            TaskSpec(
                name="norecipe",
                factory="autorl_task_gsm8k.task:GSM8KTask",
                description="a task, no recipe",
            )
        ]


def test_the_scripted_agent_on_a_task_without_a_recipe_is_refused_at_resolve() -> None:
    from autorl_runner.setup import resolve

    registry = Registry.from_entry_points()
    registry.register(NoRecipePlugin(), "autorl-task-norecipe")
    config = RunConfig.model_validate({"task": "norecipe", "model": "tiny", "agent": "scripted"})
    with pytest.raises(ConfigError, match="agent 'scripted' has no recipe for task 'norecipe'"):
        resolve(config, registry)


@pytest.mark.e2e  # a real run, interrupted
def test_ctrl_c_exits_130_and_names_the_resume_command_on_unwrapped_lines(tmp_path: Path) -> None:
    runs = tmp_path / ("a-runs-directory-whose-path-is-longer-than-eighty-columns-" * 2)
    harness = subprocess.Popen(
        [AUTORL, "run", "--task", "gsm8k", "--model", "tiny", "--runs-dir", str(runs),
         "--run-id", "ctrl-c", "--budget", "120"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )  # fmt: skip
    run_dir = runs / "ctrl-c"
    deadline = time.monotonic() + 240
    while not (run_dir / "run.json").is_file():  # the heartbeat: the agent is running
        assert harness.poll() is None and time.monotonic() < deadline
        time.sleep(0.2)
    harness.send_signal(signal.SIGINT)
    out, err = harness.communicate(timeout=180)
    assert harness.returncode == 130, out + err
    assert "Aborted!" not in err and "Traceback" not in err
    assert f"to grade what it submitted and finish it: autorl run --resume {run_dir}" in err
    assert f"run ctrl-c in {run_dir}\n" in out  # one line, however long the path
    assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
