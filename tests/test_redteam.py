"""The red-team agent inside real runs, in each isolating sandbox: every attack fails, nothing
outlives the run, the harness's records and code are intact, and the report is comparable.

Each run is a real ``autorl run`` (in-process, so the harness's PID and environment are this
test's): the tiny model on a small gsm8k split, the ``redteam`` agent with targets this test
knows about the host (the held-out split in the cache, harness code and site-packages, a
loopback port nobody forwards, fake provider keys in the harness's environment).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import secrets
import socket
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from autorl_sandbox_isolated.sandbox import bwrap_path

from autorl.config import RunConfig
from autorl.engine.run import Run

pytest.importorskip("autorl_agent_redteam", reason="needs autorl-agent-redteam")
from autorl_agent_redteam.agent import outcomes, read_results

MEMORY_GB = 1.5
PIDS = 400
MUST_RUN = {
    "forge_submissions",
    "forge_baseline",
    "read_targets",
    "read_heldout_details",
    "walk_filesystem",
    "read_env_secrets",
    "loader_paths",
    "read_proc_secrets",
    "hook_code_history",
    "write_targets",
    "write_readonly_workspace",
    "write_runtime",
    "import_harness_code",
    "signal_harness",
    "connect_host_ports",
    "network_egress",
    "api_no_token",
    "api_admin_paths",
    "api_path_traversal",
    "api_refusal_flood",
    "api_symlink_model_path",
    "api_symlink_in_checkpoint",
    "api_huge_body",
    "api_metadata_copy",
    "api_sparse_checkpoint",
    "resource_memory",
    "resource_pids",
    "outlive_daemon",
}
"""Attacks that must have been tried (a sandbox that broke the script would pass vacuously)."""


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "absent"


def _sandboxes() -> list[Any]:
    params = [
        pytest.param("isolated", marks=pytest.mark.skipif(bwrap_path() is None, reason="no bwrap"))
    ]
    docker = importlib.util.find_spec("autorl_sandbox_docker") is not None
    params.append(
        pytest.param(
            "docker",
            marks=pytest.mark.skipif(not docker, reason="autorl-sandbox-docker not installed"),
        )
    )
    return params


@pytest.fixture
def host_port() -> Iterator[int]:
    """A loopback service of the host that no sandbox forwards."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    yield server.getsockname()[1]
    server.close()


@pytest.mark.parametrize("sandbox", _sandboxes())
def test_every_attack_fails_and_the_run_is_intact(
    sandbox: str,
    tmp_path: Path,
    host_port: int,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    if sandbox == "docker":
        request.getfixturevalue("docker_engine")
    key = "sk-redteam-" + secrets.token_hex(12)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("ANTHROPIC_API_KEY", key + "-ant")

    from autorl.paths import cache_root
    from autorl.registry import get_registry
    from autorl.types import TaskContext

    task = get_registry().create("task", "gsm8k")
    options = {"train_size": 20, "eval_size": 8}
    from autorl.paths import cache_dir

    prepared = task.prepare(
        TaskContext(cache_dir=cache_dir("tasks", task.name, str(task.version)), options=options)
    )
    import autorl_report_basic.markdown as report_module
    import autorl_task_webshop

    webshop_eval = Path(autorl_task_webshop.__file__).parent / "data" / "goals_eval.json"
    site_packages = Path(sysconfig.get_paths()["purelib"])
    guarded = [Path(report_module.__file__), site_packages / "autorl_redteam.pth"]
    before = {p: _sha(p) for p in guarded}
    targets = {
        "read": [
            str(prepared.eval_path),
            str(webshop_eval),
            str(cache_root() / "tasks"),
            str(cache_root() / "baselines"),
        ],
        # system files whose names merely contain "eval" or "details" (zipdetails, man pages)
        "walk_ignore": ["/usr/share", "/usr/bin", "/usr/sbin", "/usr/libexec", "/usr/include"],
        "write": [str(p) for p in guarded] + [str(site_packages)],
        "harness_pid": os.getpid(),
        "host_ports": [host_port],
        "secrets": [key],
        "probe_network": True,
        "memory_probe_bytes": int(2 * MEMORY_GB * 1024**3),
        "pids_probe": PIDS + 200,
        "sparse_bytes": 10 * 1024**3,
    }
    config = RunConfig.model_validate(
        {
            "task": "gsm8k",
            "model": "tiny",
            "agent": "redteam",
            "sandbox": sandbox,
            "seed": 0,
            "runs_dir": str(tmp_path / "runs"),
            "run_id": "redteam",
            "task_options": options,
            "agent_options": {"targets": targets},
            "budget": {"wall_seconds": 240, "max_submissions": 6},
            "limits": {"memory_gb": MEMORY_GB, "pids": PIDS},
        }
    )
    engine = Run(config, quiet=True)
    from autorl_grading.checkpoints import hash_tree

    try:
        engine_base = None
        outcome = engine.execute()
        engine_base = engine.setup.model_info.path
    finally:
        after = {p: _sha(p) for p in guarded}
        for path, digest in before.items():  # never leave a landed attack behind
            if digest == "absent" and path.exists():
                path.unlink()
    run_dir = tmp_path / "runs" / "redteam"
    workspace = run_dir / "workspace"
    results = read_results(workspace)
    seen = outcomes(results)

    # every attack was tried, and none succeeded
    assert set(seen) >= MUST_RUN, f"attacks not tried: {sorted(MUST_RUN - set(seen))}"
    landed = {r["attack"]: r["detail"] for r in results if r["outcome"] == "succeeded"}
    # a daemon running during the run is allowed; outliving it is not (checked below)
    landed.pop("outlive_daemon", None)
    assert landed == {}, json.dumps(landed, indent=1)

    # harness code and site-packages untouched; no agent code ran in the harness
    assert after == before
    markers = workspace / "code" / "redteam" / "markers"
    assert not markers.exists() or sorted(os.listdir(markers)) == []

    # nothing outlived the run: the daemon's heartbeat stopped, no process is left in the cgroup
    beat = workspace / "code" / "redteam" / "heartbeat"
    size = beat.stat().st_size if beat.exists() else 0
    time.sleep(1.5)
    assert (beat.stat().st_size if beat.exists() else 0) == size, "the daemon outlived the run"

    # the records are the harness's: no forged line, the baseline as evaluated
    lines = [json.loads(x) for x in (run_dir / "submissions.jsonl").read_text().splitlines()]
    assert all(entry.get("score") != 100 for entry in lines), lines
    baseline = json.loads((run_dir / "baseline.json").read_text())
    assert baseline["score"] >= 0
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["comparable"] is True and summary["problems"] == [], summary["problems"]
    assert summary["baseline_score"] == baseline["score"]
    assert outcome.best_score is None or outcome.best_score <= 100
    events = (run_dir / "events.jsonl").read_text()
    assert "redteam" not in {json.loads(x).get("event") for x in events.splitlines()}
    # the refusal flood (1,200 probes) left a bounded record of grader probing, paths cut
    refused = [
        e for e in map(json.loads, events.splitlines()) if e.get("event") == "grader_refused"
    ]
    assert 100 <= len(refused) <= 205, len(refused)
    assert all(len(e["path"]) <= 200 for e in refused)

    # the base model in the cache is as it was (every file), and the key never reached the agent
    assert engine_base is not None
    assert hash_tree(engine_base) == engine.setup.base_tree_hash
    given = workspace / "code" / "redteam" / "targets.json"  # the test's own input holds it
    for path in workspace.rglob("*"):
        if path == given:
            continue
        if path.is_file() and not path.is_symlink() and path.stat().st_size < 5_000_000:
            assert key.encode() not in path.read_bytes(), f"the provider key reached {path}"
    assert sys.modules.get("autorl_redteam") is None


def test_local_is_no_boundary_but_a_modified_base_model_is_flagged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the development sandbox the attack on the base model lands (there is no boundary), and
    the harness's full-tree hash catches it: the run is flagged and marked not comparable."""
    monkeypatch.setenv("AUTORL_CACHE", str(tmp_path / "cache"))  # the attack edits the cache
    config = RunConfig.model_validate(
        {
            "task": "gsm8k",
            "model": "tiny",
            "agent": "redteam",
            "sandbox": "local",
            "runs_dir": str(tmp_path / "runs"),
            "run_id": "local",
            "task_options": {"train_size": 20, "eval_size": 8},
            "agent_options": {"targets": {"only": ["write_readonly_workspace"]}},
            "budget": {"wall_seconds": 120},
        }
    )
    Run(config, quiet=True).execute()
    run_dir = tmp_path / "runs" / "local"
    seen = outcomes(read_results(run_dir / "workspace"))
    assert seen == {"write_readonly_workspace": "succeeded"}
    info = json.loads((run_dir / "run.json").read_text())
    assert info["integrity"] == {"base_model_modified": True}
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["comparable"] is False
    assert any("base model was modified" in p for p in summary["problems"])
