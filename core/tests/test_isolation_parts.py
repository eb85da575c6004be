"""The pieces of the boundary, one by one: agent runtime, disk watch, code history without
hooks, trajectory copies without links, and a precise error where the sandbox cannot run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from autorl_sandbox_common.agentfiles import copy_agent_file
from autorl_sandbox_common.runtime import build_runtime, closure
from autorl_sandbox_isolated import sandbox as isolated

from autorl.engine.diskwatch import DiskWatch, disk_usage
from autorl.engine.history import CodeHistory
from autorl.errors import ConfigError


def test_runtime_has_the_training_stack_and_no_harness(tmp_path: Path) -> None:
    runtime = build_runtime(cache=tmp_path)
    assert "torch" in runtime.distributions and "trl" in runtime.distributions
    assert not [d for d in runtime.distributions if d.startswith("autorl")]
    site = next(runtime.root.glob("lib/python3*/site-packages"))
    assert not list(site.glob("autorl*")), "harness code in the agent runtime"
    probe = "import importlib.util as u; print(u.find_spec('autorl'), bool(u.find_spec('torch')))"
    out = subprocess.run([str(runtime.python), "-c", probe], capture_output=True, text=True)
    assert out.stdout.split() == ["None", "True"], out.stderr
    again = build_runtime(cache=tmp_path)  # cached by digest: same directory, no rebuild
    assert again.root == runtime.root


def test_runtime_adds_the_kit_requirements_and_refuses_unknown_ones(tmp_path: Path) -> None:
    runtime = build_runtime(["rank-bm25"], cache=tmp_path)
    assert "rank-bm25" in runtime.distributions
    with pytest.raises(ConfigError, match="pip install no-such-dist"):
        build_runtime(["no-such-dist"], cache=tmp_path)


def test_closure_follows_requirements_but_never_autorl() -> None:
    from autorl_sandbox_common.runtime import _installed

    found = closure(["transformers", "autorl-task-gsm8k"], _installed())
    assert "tokenizers" in found and "huggingface-hub" in found
    assert not [d for d in found if d.startswith("autorl")]


def test_disk_usage_counts_allocated_blocks(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse.bin"
    with open(sparse, "wb") as fh:
        fh.truncate(10 * 1024**3)
    (tmp_path / "real.bin").write_bytes(os.urandom(2 * 1024**2))
    used, entries = disk_usage((tmp_path,))
    assert 2 * 1024**2 <= used < 50 * 1024**2 and entries == 2


def test_disk_watch_flags_a_workspace_over_its_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("autorl.engine.diskwatch.INTERVAL_S", 0.05)
    watch = DiskWatch((tmp_path,), cap_gb=1 / 1024).start()  # 1 MiB
    (tmp_path / "big.bin").write_bytes(os.urandom(3 * 1024**2))
    for _ in range(100):
        if watch.exceeded:
            break
        import time

        time.sleep(0.05)
    watch.stop()
    assert watch.exceeded and watch.report()["used_bytes"] > 1024**2


def test_code_history_never_runs_hooks_or_agent_git_config(tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    history = CodeHistory(tmp_path / "history.git", code)
    marker = tmp_path / "hook-ran"
    hook = tmp_path / "history.git" / "hooks" / "post-commit"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    # the agent's own repository in code/, with a hooks path and an fsmonitor of its own
    (code / ".git").mkdir()
    (code / ".git" / "config").write_text(
        f"[core]\n\thooksPath = {hook.parent}\n\tfsmonitor = {hook}\n"
    )
    (code / ".gitattributes").write_text("* filter=evil\n")
    (code / "train.py").write_text("print('hi')\n")
    assert history.snapshot("one") is not None
    assert history.snapshot("two") is not None
    assert not marker.exists(), "the harness's git ran a hook"


def test_agent_files_are_copied_without_links_or_fifos(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    secret = tmp_path / "eval.jsonl"
    secret.write_text("held-out answers\n")
    (home / "log.jsonl").write_text('{"ok": 1}\n')
    (home / "link.jsonl").symlink_to(secret)
    (home / "dir").symlink_to(tmp_path)
    os.mkfifo(home / "fifo.jsonl")
    out = tmp_path / "out"
    assert copy_agent_file(home / "log.jsonl", out / "log.jsonl", home)
    assert not copy_agent_file(home / "link.jsonl", out / "link.jsonl", home)
    assert not copy_agent_file(home / "dir" / "eval.jsonl", out / "x.jsonl", home)
    assert not copy_agent_file(home / "fifo.jsonl", out / "fifo.jsonl", home)  # never blocks
    assert not copy_agent_file(home / "log.jsonl", out / "big.jsonl", home, max_bytes=3)
    assert sorted(p.name for p in out.iterdir()) == ["log.jsonl"]


def test_missing_bubblewrap_is_a_precise_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolated, "bwrap_path", lambda: None)
    with pytest.raises(ConfigError) as info:
        isolated.IsolatedSandbox().check()
    assert "bubblewrap" in info.value.message and "apt-get install -y bubblewrap" in str(
        info.value.hint
    )


def test_only_the_assigned_gpus_are_shown(tmp_path: Path) -> None:
    """No GPU here: check what the sandbox would mount and tell CUDA (device nodes are bound
    only for the assigned indices; CUDA numbers what it sees from 0)."""
    from autorl_testing.sandbox import sandbox_request

    from autorl.types import Limits

    box = isolated.IsolatedSandbox()
    request = sandbox_request(tmp_path, "", limits=Limits(gpus=("2", "5")))
    argv = box._argv(request, tmp_path / "s.py", tmp_path / "s.json", tmp_path, tmp_path, 9)
    bound = {argv[i + 1] for i, a in enumerate(argv) if a == "--dev-bind-try"}
    assert {"/dev/nvidia2", "/dev/nvidia5", "/dev/nvidiactl", "/dev/nvidia-uvm"} <= bound
    assert "/dev/nvidia0" not in bound
    assert box.agent_env(request, None)["CUDA_VISIBLE_DEVICES"] == "0,1"
    none = sandbox_request(tmp_path / "b", "")
    plain = box._argv(none, tmp_path / "s.py", tmp_path / "s.json", tmp_path, tmp_path, 9)
    assert "--dev-bind-try" not in plain
    assert box.agent_env(none, None)["CUDA_VISIBLE_DEVICES"] == ""


def test_closure_follows_requested_extras() -> None:
    """``textworld[pddl]`` brings the planner ALFWorld's engine needs; plain ``textworld`` not."""
    from autorl_sandbox_common.runtime import _installed

    installed = _installed()
    if "textworld" not in installed:
        pytest.skip("textworld not installed")
    assert "fast-downward-textworld" in closure(["textworld[pddl]"], installed)
    assert "fast-downward-textworld" not in closure(["textworld"], installed)


def test_a_run_dir_too_deep_for_socket_paths_gets_a_short_state_dir(tmp_path: Path) -> None:
    """AF_UNIX paths hold 107 bytes: a campaign's deep run directory must not fail the run."""
    import socket

    from autorl.engine.agent_phase import state_dir_for

    shallow = tmp_path / "r"
    assert state_dir_for(shallow) == shallow / "sandbox"
    deep = tmp_path / ("d" * 60) / "campaigns" / "demo" / "runs" / "0123456789ab-1"
    state = state_dir_for(deep)
    assert state != deep / "sandbox" and state.is_dir()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(state / "gateway.sock"))  # fits
    with socket.socket(socket.AF_UNIX) as sock, pytest.raises(OSError, match="too long"):
        sock.bind(str(deep / "sandbox" / "gateway.sock"))  # what it would have been
    (state / "gateway.sock").unlink()
    state.rmdir()
