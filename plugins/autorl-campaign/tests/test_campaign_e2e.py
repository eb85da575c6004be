"""The docs' example campaign end to end (docs/campaigns.md): 8 real runs on the pool and on a
local Ray instance (inside a network namespace of its own: Ray binds non-loopback addresses on
the host's network), the campaign process killed mid-way, resumed, and compared.

Acceptance: no cell finished before the kill runs again, nothing is lost, no run outlives the
killed campaign, and `autorl compare` prints its tables and writes the HTML page.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import autorl_agent_react  # noqa: F401
import autorl_task_humaneval  # noqa: F401
import psutil
import pytest
from autorl_testing.sandbox import cgroups_gone, sandbox_cgroups

pytestmark = pytest.mark.slow  # 8 real runs per executor: about 3 minutes each on 2 busy cores


DOCS = Path(__file__).resolve().parents[3] / "docs" / "campaigns.md"
AUTORL = str(Path(sys.executable).parent / "autorl")


def docs_campaign() -> str:
    match = re.search(r"^```yaml campaign\n(.*?)^```$", DOCS.read_text(), re.MULTILINE | re.DOTALL)
    assert match, "docs/campaigns.md lost its example campaign"
    return match.group(1)


def cells(store: Path) -> dict[str, dict]:
    if not store.is_file():
        return {}
    with sqlite3.connect(store) as db:
        db.row_factory = sqlite3.Row
        return {r["cell_id"]: dict(r) for r in db.execute("SELECT * FROM cells")}


def runs_of(campaign_dir: Path) -> list[psutil.Process]:
    """`autorl run` processes still alive for this campaign."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if " run --config " in cmdline and str(campaign_dir) in cmdline:
            found.append(proc)
    return found


def workdir(root: Path) -> Path:
    import autorl_agent_react.examples as examples

    root.mkdir(parents=True, exist_ok=True)
    (root / "demo.yaml").write_text(docs_campaign())
    shutil.copy(examples.TINY, root / "react_tiny.yaml")
    return root


def test_the_docs_campaign_on_the_pool_is_killed_resumed_and_compared(tmp_path: Path) -> None:
    scenario(workdir(tmp_path), [])


def test_the_docs_campaign_on_ray_is_killed_resumed_and_compared(tmp_path: Path) -> None:
    import autorl_executor_ray.netns as netns

    try:
        host = netns.NetnsHost()
        host.start()
    except netns.NetnsUnavailable as exc:
        pytest.skip(f"no network namespace for Ray here: {exc}")
    try:
        host.call(
            scenario,
            workdir(tmp_path),
            ["--executor", "ray", "--executor-option", "num_cpus=2"],
            timeout=1800,
        )
    finally:
        host.close()


def scenario(workdir: Path, flags: list[str]) -> None:
    """Dry run, run, SIGKILL the campaign after two cells, resume, list, compare; the checks
    run where the campaign runs (in the namespace, for Ray)."""
    campaign_dir = workdir / "campaigns" / "demo"
    store = campaign_dir / "campaign.sqlite"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}

    dry = subprocess.run(
        [AUTORL, "campaign", "run", "demo.yaml", "--dry-run", *flags],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "campaign demo: 8 cells" in dry.stdout and not campaign_dir.exists()

    # cell ids repeat across runs of this test: what an older version left is not this run's
    stale = sandbox_cgroups()
    log = (workdir / "first.log").open("w")
    first = subprocess.Popen(
        [AUTORL, "campaign", "run", "demo.yaml", *flags],
        cwd=workdir, env=env, stdout=log, stderr=log,
    )  # fmt: skip
    deadline = time.monotonic() + 420
    while time.monotonic() < deadline:
        done = [c for c in cells(store).values() if c["status"] == "completed"]
        if len(done) >= 2:
            break
        assert first.poll() is None, (workdir / "first.log").read_text()
        time.sleep(1)
    else:
        pytest.fail("no two cells completed in 7 minutes:\n" + (workdir / "first.log").read_text())
    first.send_signal(signal.SIGKILL)  # the harshest stop: no handler runs in the campaign
    first.wait()
    before = cells(store)
    finished = {cid: c for cid, c in before.items() if c["status"] == "completed"}
    stamps = {
        cid: (Path(c["run_dir"]) / "run.json").stat().st_mtime_ns for cid, c in finished.items()
    }
    assert 2 <= len(finished) < 8

    # every run of the killed campaign stops on its own (SIGTERM from the kernel), recorded
    deadline = time.monotonic() + 90
    while runs_of(campaign_dir) and time.monotonic() < deadline:
        time.sleep(1)
    assert runs_of(campaign_dir) == [], "runs outlived their campaign"
    left = [path for cid in before for path in cgroups_gone(cid, stale)]
    assert left == [], f"sandbox cgroups outlived their runs: {left}"
    stopped = [c for c in before.values() if c["status"] == "running"]
    for c in stopped:
        run_json = Path(c["run_dir"]) / "run.json"
        if run_json.is_file():  # it had started: it says it was interrupted
            assert json.loads(run_json.read_text())["status"] == "interrupted"

    refused = subprocess.run(
        [AUTORL, "campaign", "run", "demo.yaml", *flags],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode != 0 and "--resume" in refused.stdout + refused.stderr

    resumed = subprocess.run(
        [AUTORL, "campaign", "run", "demo.yaml", "--resume", *flags],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"{len(finished)} skipped" in resumed.stdout
    after = cells(store)
    assert len(after) == 8 and {c["status"] for c in after.values()} == {"completed"}
    for cid, c in finished.items():  # finished before the kill: not run again, untouched
        assert after[cid]["attempts"] == 1 and after[cid]["run_dir"] == c["run_dir"]
        assert (Path(c["run_dir"]) / "run.json").stat().st_mtime_ns == stamps[cid]
    for c in stopped:
        assert after[c["cell_id"]]["attempts"] == 2
    assert all(c["baseline"] is not None and c["best"] is not None for c in after.values())
    # the post-hoc analysis of each run reaches the store (no cell of this campaign cheats)
    # (the raw store keeps flags as SQLite integers: 0 is "analysed, not flagged", NULL is "no
    # analysis")
    analysed = {cid: (c["flagged"], c["best_route"]) for cid, c in after.items()}
    assert all(f == 0 and r for f, r in analysed.values()), analysed

    listed = subprocess.run(
        [AUTORL, "runs", "list", "--runs-dir", str(campaign_dir / "runs"), "--json",
         "--campaign", "demo"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    rows = json.loads(listed.stdout)
    assert {(r["agent"], r["task"], r["seed"]) for r in rows if r["status"] == "completed"} == {
        (a, t, s) for a in ("scripted", "react") for t in ("gsm8k", "humaneval") for s in (0, 1)
    }

    compared = subprocess.run(
        [AUTORL, "compare", str(campaign_dir)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "scripted" in compared.stdout and "react" in compared.stdout
    assert (campaign_dir / "compare" / "index.html").is_file()
