"""A real tiny campaign in which one cell's sandbox fails to start (issue #31 acceptance): the cell
ends ``infra_error`` with its cause, `autorl compare` leaves it out and names it, and
`autorl campaign run FILE --resume` runs only that cell again, as a new attempt in a new run
directory, keeping the earlier one.

The failure is injected by a test-only plugin that the child `autorl run` processes discover
like any installed distribution (a ``dist-info`` with an ``autorl.plugins`` entry point on
``PYTHONPATH``): a sandbox ``flaky`` that is the real ``isolated`` sandbox, except that it raises
once, before starting the agent, for the cell named by a marker file. Everything else is real:
the campaign runner, the child runs, the scripted agent, the grader and the sealed scoring.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from autorl_testing.runs import installed_plugin

pytestmark = pytest.mark.slow  # three real runs of the scripted agent on the tiny model

AUTORL = str(Path(sys.executable).parent / "autorl")
CAUSE = "injected by the test: the sandbox could not start"

PLUGIN = f'''
"""Test-only: the isolated sandbox, failing once for the cell a marker file names."""

import os
from pathlib import Path

from autorl import hookimpl
from autorl.specs import SandboxSpec
from autorl_sandbox_isolated.sandbox import IsolatedSandbox


class FlakySandbox(IsolatedSandbox):
    name = "flaky"

    def start(self, request):
        marker = Path(os.environ["AUTORL_TEST_FLAKY_DIR"]) / (
            "fail-" + os.environ.get("AUTORL_CAMPAIGN_CELL", "")
        )
        if marker.exists():
            marker.unlink()  # a transient failure: the next attempt starts
            raise RuntimeError("{CAUSE}")
        return super().start(request)


@hookimpl
def autorl_register_sandboxes():
    return [
        SandboxSpec(
            name="flaky",
            factory="autorl_test_flaky_sandbox:FlakySandbox",
            description="test only: isolated, failing once on request",
        )
    ]
'''

CAMPAIGN = """\
model: tiny
task: gsm8k
agent: scripted
sandbox: flaky
task_options: {train_size: 20, eval_size: 8}
budget: {wall_seconds: 60, max_submissions: 2}
agent_options: {phase_seconds: 4}  # the budget is the guard: the campaign is under test
campaign:
  name: infra
  executor: pool
  executor_options: {workers: 2}
  cpus_per_cell: 1
axes:
  seed: [0, 1]
"""


def install_plugin(root: Path) -> Path:
    """A directory that, on PYTHONPATH, holds the plugin as an installed distribution."""
    site = installed_plugin(root / "site", "autorl-test-flaky-sandbox", "autorl_test_flaky_sandbox")
    (site / "autorl_test_flaky_sandbox.py").write_text(PLUGIN)
    return site


def cells(store: Path) -> dict[str, dict]:
    with sqlite3.connect(store) as db:
        db.row_factory = sqlite3.Row
        return {r["cell_id"]: dict(r) for r in db.execute("SELECT * FROM cells")}


def attempts(store: Path) -> list[tuple]:
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT cell_id, attempt, status, run_dir FROM attempts ORDER BY 1, 2")
        return [tuple(r) for r in rows]


def test_an_injected_infra_failure_is_left_out_named_and_only_it_reruns(tmp_path: Path) -> None:
    from autorl_sandbox_isolated.sandbox import IsolatedSandbox

    from autorl.errors import ConfigError

    try:
        IsolatedSandbox().check()
    except ConfigError as exc:
        pytest.skip(f"the isolated sandbox cannot run here: {exc}")

    from autorl_campaign.spec import load_campaign

    site = install_plugin(tmp_path)
    (tmp_path / "infra.yaml").write_text(CAMPAIGN)
    flaky = tmp_path / "flaky"
    flaky.mkdir()
    camp = load_campaign(tmp_path / "infra.yaml")
    victim, other = camp.cells[1].cell_id, camp.cells[0].cell_id
    (flaky / f"fail-{victim}").touch()
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "AUTORL_TEST_FLAKY_DIR": str(flaky),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
    }
    campaign_dir = tmp_path / "campaigns" / "infra"
    store = campaign_dir / "campaign.sqlite"

    def autorl(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [AUTORL, *args], cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=timeout,
        )  # fmt: skip

    first = autorl("campaign", "run", "infra.yaml")
    out = first.stdout + first.stderr
    assert first.returncode == 1, out  # a cell did not give an agent result
    assert "1 completed, 0 failed, 1 infra_error" in out, out
    assert "--resume runs them again" in out
    before = cells(store)
    assert before[other]["status"] == "completed", before[other]
    crashed = before[victim]
    assert crashed["status"] == "infra_error", crashed
    assert crashed["end_reason"] == "infra_error"
    assert CAUSE in (crashed["infra_cause"] or ""), crashed
    crashed_dir = Path(crashed["run_dir"])
    info = json.loads((crashed_dir / "run.json").read_text())
    assert info["end_reason"] == "infra_error" and CAUSE in info["infra_cause"]
    other_stamp = (Path(before[other]["run_dir"]) / "run.json").stat().st_mtime_ns

    compared = autorl("compare", str(campaign_dir), "--resamples", "999", timeout=300)
    flat = " ".join((compared.stdout + compared.stderr).split())
    assert compared.returncode == 0, flat
    assert "1 cell(s) ended infra_error" in flat and victim in flat and CAUSE in flat
    assert "Infrastructure failures" in flat

    resumed = autorl("campaign", "run", "infra.yaml", "--resume")
    out = resumed.stdout + resumed.stderr
    assert resumed.returncode == 0, out
    assert "1 completed, 0 failed, 0 infra_error, 1 skipped" in out, out
    after = cells(store)
    assert after[victim]["status"] == "completed" and after[victim]["attempts"] == 2
    assert Path(after[victim]["run_dir"]) != crashed_dir and crashed_dir.is_dir()
    # the completed cell did not run again: same attempt, same run, untouched
    assert after[other]["attempts"] == 1 and after[other]["run_dir"] == before[other]["run_dir"]
    assert (Path(after[other]["run_dir"]) / "run.json").stat().st_mtime_ns == other_stamp
    assert [(c, a, s) for c, a, s, _ in attempts(store)] == sorted(
        [(other, 1, "completed"), (victim, 1, "infra_error"), (victim, 2, "completed")]
    )
    # the engine scored both cells under the default protocol (sealed)
    assert {c["protocol"] for c in after.values()} == {"sealed"}

    compared = autorl("compare", str(campaign_dir), "--resamples", "999", timeout=300)
    flat = " ".join((compared.stdout + compared.stderr).split())
    assert compared.returncode == 0, flat
    assert "ended infra_error" not in flat  # nothing is left out any more...
    assert "Infrastructure failures" in flat  # ...and the earlier attempt is still named
    assert "protocol: sealed" in flat
