"""Runs for the viewer's tests: hand-written ones in the record's format (an agent that wrote
HTML and script into everything it could, a run still going) and one real tiny run (react on
the scripted driver), plus a campaign store whose cells point at them.

The hand-written runs use the files the harness writes (``manifest.json``, ``run.json``,
``submissions.jsonl``, ``events.jsonl``, ``driver_calls.jsonl``, ``agent.log``,
``code-history.git``, ``contributions/analysis.json``): the record's files are the interface.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from autorl_campaign.store import CampaignStore
from autorl_serving import ThreadedServer
from autorl_testing.runs import run_cache
from autorl_view.app import create_app

AUTORL = str(Path(sys.executable).parent / "autorl")
TOKEN = "test-token-0123456789"
PAYLOAD = (
    "<script>window.__pwned = 'script'; document.title = 'pwned';</script>"
    "<img src=x onerror=\"window.__pwned = 'img'\">"
    '"><svg onload="window.__pwned = \'svg\'"></svg>'
)
"""What the evil agent writes everywhere: each piece would set ``window.__pwned`` if run."""


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def write_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def manifest(run_id: str, agent: str = "react", driver: str | None = "scripted/evil.yaml") -> dict:
    return {
        "run_id": run_id,
        "created": "2026-01-02T03:04:05Z",
        "record_version": 2,
        "task": {"name": "gsm8k", "version": "1", "metric": "accuracy"},
        "config": {
            "task": "gsm8k",
            "agent": agent,
            "driver": driver,
            "model": "tiny",
            "seed": 0,
            "budget": {"wall_seconds": 300.0},
            "scoring": {"protocol": "reference"},
        },
    }


def code_history(git_dir: Path, snapshots: list[dict[str, str]]) -> list[str]:
    """A bare repository with one commit per snapshot of ``code/`` (paths below it); the
    revisions."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "autorl",
        "GIT_AUTHOR_EMAIL": "autorl@localhost",
        "GIT_COMMITTER_NAME": "autorl",
        "GIT_COMMITTER_EMAIL": "autorl@localhost",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    work = git_dir.parent / "snapshot-tmp"

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", f"--git-dir={git_dir}", f"--work-tree={work}", *args],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True, env=env)
    revisions = []
    for n, files in enumerate(snapshots, 1):
        shutil.rmtree(work, ignore_errors=True)
        for name, text in files.items():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).write_text(text, encoding="utf-8")
        git("add", "-A")
        git("commit", "-q", "--allow-empty", "-m", f"submission {n}")
        revisions.append(git("rev-parse", "HEAD"))
    shutil.rmtree(work, ignore_errors=True)
    return revisions


def evil_run(runs: Path, run_id: str = "evil", with_driver: bool = True) -> Path:
    """A finished run whose agent wrote :data:`PAYLOAD` into its messages, tool calls, log,
    file names and submission reasons; the analysis quotes it as evidence."""
    run_dir = runs / run_id
    write_json(
        run_dir / "manifest.json",
        manifest(run_id, driver=None if not with_driver else "scripted/evil.yaml"),
    )
    write_json(
        run_dir / "run.json",
        {
            "status": "completed",
            "started": "2026-01-02T03:04:05Z",
            "ended": "2026-01-02T03:06:05Z",
            "end_reason": "agent_exit",
            "agent_seconds": 120.0,
            "budget_seconds": 300.0,
        },
    )
    write_json(run_dir / "baseline.json", {"score": 10.0, "n": 4, "metrics": {"score_se": 1.0}})
    revs = code_history(
        run_dir / "code-history.git",
        [
            {"train.py": "print('v1')\n"},  # paths below code/, as the harness keeps them
            {"train.py": f"print('v2')  # {PAYLOAD}\n", f"{PAYLOAD[:40]}.py": PAYLOAD},
        ],
    )
    write_lines(
        run_dir / "submissions.jsonl",
        [
            {
                "submission_id": 1,
                "status": "received",
                "time": "2026-01-02T03:05:00Z",
                "elapsed_s": 55.0,
                "model_path": f"output/{PAYLOAD}",
                "code_revision": revs[0],
            },
            {
                "submission_id": 1,
                "status": "scored",
                "score": 20.0,
                "weight_hash": "sha256:aa11",
                "metrics": {"score_se": 2.0},
            },
            {
                "submission_id": 2,
                "status": "received",
                "time": "2026-01-02T03:05:30Z",
                "elapsed_s": 85.0,
                "model_path": "output/v2",
                "code_revision": revs[1],
            },
            {"submission_id": 2, "status": "failed", "reason": f"invalid checkpoint {PAYLOAD}"},
        ],
    )
    write_lines(
        run_dir / "events.jsonl",
        [
            {"event": "baseline", "timestamp": "2026-01-02T03:04:06Z", "score": 10.0},
            {
                "event": "submission",
                "timestamp": "2026-01-02T03:05:00Z",
                "id": 1,
                "path": f"output/{PAYLOAD}",
            },
            {
                "event": "budget_warning",
                "level": "warning",
                "timestamp": "2026-01-02T03:05:40Z",
                "fraction": 0.5,
            },
        ],
    )
    if with_driver:
        messages = [{"role": "user", "content": f"the task {PAYLOAD}"}]
        answer = {
            "text": f"I will write {PAYLOAD}",
            "tool_calls": [{"id": "call_1", "name": "shell", "arguments": {"command": PAYLOAD}}],
        }
        second = [
            *messages,
            {"role": "assistant", "content": answer["text"], "tool_calls": answer["tool_calls"]},
            {"role": "tool", "tool_call_id": "call_1", "content": f"exit code 0\n{PAYLOAD}"},
        ]
        write_lines(
            run_dir / "driver_calls.jsonl",
            [
                {
                    "ts": "2026-01-02T03:04:10Z",
                    "request": {"messages": messages, "system": PAYLOAD},
                    "response": answer,
                    "usage": {"input_tokens": 100, "output_tokens": 20},
                    "cost_usd": 0.001,
                    "latency_s": 0.5,
                },
                {
                    "ts": "2026-01-02T03:05:10Z",
                    "request": {"messages": second},
                    "response": {"text": "done", "tool_calls": []},
                    "usage": {"input_tokens": 150, "output_tokens": 5},
                    "cost_usd": 0.002,
                },
            ],
        )
    (run_dir / "agent.log").write_text(f"step 0 loss 1.0\n{PAYLOAD}\nsaved\n", encoding="utf-8")
    evidence = {"source": "agent.log", "text": PAYLOAD, "line": 2}
    write_json(
        run_dir / "contributions" / "analysis.json",
        {
            "name": "analysis",
            "summary": {"flagged": True},
            "data": {
                "flags": [
                    {
                        "kind": "grader_probing",
                        "severity": "warning",
                        "message": f"the agent probed {PAYLOAD}",
                        "evidence": [evidence],
                    },
                ],
                "submissions": [
                    {
                        "submission_id": 1,
                        "route": {
                            "label": "sft",
                            "methods": ["sft"],
                            "basis": "claimed",
                            "evidence": [evidence],
                        },
                    },
                ],
            },
        },
    )
    return run_dir


def running_run(runs: Path, run_id: str = "live") -> Path:
    """A run still going: run.json says ``running`` (the heartbeat), one submission so far."""
    run_dir = runs / run_id
    write_json(run_dir / "manifest.json", manifest(run_id, driver=None, agent="scripted"))
    write_json(
        run_dir / "run.json",
        {
            "status": "running",
            "started": "2026-01-02T03:04:05Z",
            "pid": 1,
            "agent_seconds": 30.0,
            "budget_seconds": 300.0,
        },
    )
    write_json(run_dir / "baseline.json", {"score": 10.0, "n": 4, "metrics": {}})
    write_lines(
        run_dir / "submissions.jsonl",
        [
            {
                "submission_id": 1,
                "status": "scored",
                "score": 12.0,
                "elapsed_s": 20.0,
                "weight_hash": "sha256:bb22",
            }
        ],
    )
    (run_dir / "agent.log").write_text("training...\n", encoding="utf-8")
    return run_dir


CAMPAIGN_CELLS = [
    # cell id, agent, seed, status, improvement (completed cells have a run)
    ("c-a", "react", 1, "completed", 10.0),
    ("c-b", "react", 2, "completed", 6.0),
    ("c-c", "codex", 1, "completed", 2.0),
    ("c-d", "codex", 2, "running", None),
    ("c-e", "codex", 3, "pending", None),
]


def campaign(folder: Path) -> Path:
    """A campaign store, written through autorl_campaign's store: two agents' groups, each
    completed cell's run a hand-written one in ``<campaign>/runs/<cell>``, one cell running
    and one pending."""
    store = CampaignStore(folder)
    try:
        store.set_meta(name="viewer-toy")
        cells = []
        for n, (cell_id, agent, seed, _, _) in enumerate(CAMPAIGN_CELLS, 1):
            axes = {"agent": agent, "task": "gsm8k", "model": "tiny", "seed": seed}
            config = {**axes, "budget": {"wall_seconds": 300}}
            cells.append(
                {"cell_id": cell_id, "position": n, "replicate": 0, "axes": axes, "config": config}
            )
        store.add_cells(cells)
        for cell_id, _, _, status, improvement in CAMPAIGN_CELLS:
            if status == "pending":
                continue
            run_dir = folder / "runs" / f"cell-{cell_id[2:]}"
            if improvement is not None:
                evil_run(folder / "runs", run_dir.name)
            store.start(cell_id, run_dir.name, run_dir)
            if status != "completed":
                continue
            store.finish(
                cell_id,
                status="completed",
                results={
                    "protocol": "reference",
                    "baseline": 10.0,
                    "baseline_se": 1.0,
                    "best": 10.0 + improvement,
                    "score": 10.0 + improvement,
                    "improvement": improvement,
                    "comparable": 1,
                    "end_reason": "agent_exit",
                },
            )
    finally:
        store.close()
    return folder


class Served:
    """The viewer serving ``root`` on loopback, and its token URL."""

    def __init__(self, root: Path) -> None:
        self.server = ThreadedServer(create_app(root, TOKEN), what="viewer test").start()
        self.base = self.server.url

    def url(self, path: str = "/") -> str:
        sep = "&" if "?" in path else "?"
        return f"{self.base}{path}{sep}token={TOKEN}"


@pytest.fixture(scope="session")
def served_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """runs/{evil, evil-log, live} and a campaign whose runs are the evil ones."""
    root = tmp_path_factory.mktemp("viewer")
    runs = root / "runs"
    evil_run(runs)
    evil_run(runs, "evil-log", with_driver=False)
    running_run(runs)
    campaign(root / "campaigns" / "toy")
    return root


@pytest.fixture(scope="session")
def served(served_root: Path) -> Iterator[Served]:
    server = Served(served_root)
    try:
        yield server
    finally:
        server.server.stop()


@pytest.fixture(scope="session")
def real_run(served_root: Path) -> Path:
    """A real tiny run next to the hand-written ones: react on the scripted driver with the
    shipped example script (trains a few steps, submits, checks its budget)."""
    from autorl_agent_react import examples

    root = served_root / "work"
    root.mkdir()
    shutil.copy(examples.TINY, root / "tiny.yaml")
    env = {**os.environ, "AUTORL_CACHE": str(run_cache(root)), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [
            AUTORL,
            "run",
            "--task",
            "gsm8k",
            "--model",
            "tiny",
            "--agent",
            "react",
            "--driver",
            "scripted/tiny.yaml",
            "--runs-dir",
            str(served_root / "runs"),
            "--run-id",
            "tiny",
            "--budget",
            "300",
            "--task-option",
            "train_size=20",
            "--task-option",
            "eval_size=4",
        ],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return served_root / "runs" / "tiny"


@pytest.fixture(scope="session")
def token() -> str:
    return TOKEN


@pytest.fixture(scope="session")
def payload() -> str:
    return PAYLOAD


@pytest.fixture(scope="session")
def serve() -> type[Served]:
    """Start another viewer: ``serve(root)`` (stop it with ``.server.stop()``)."""
    return Served


@pytest.fixture
def live_run(served_root: Path) -> Path:
    """A running run of this test's own (the test rewrites its files)."""
    n = len(list((served_root / "runs").glob("live-*")))
    return running_run(served_root / "runs", f"live-{n + 1}")
