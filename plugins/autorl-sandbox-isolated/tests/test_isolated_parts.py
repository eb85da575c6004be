"""The isolated sandbox's checks that need no bubblewrap run: a precise error where it cannot
run, and what it would mount and tell CUDA for the assigned GPUs."""

from __future__ import annotations

from pathlib import Path

import pytest
from autorl_sandbox_isolated import sandbox as isolated
from autorl_testing.sandbox import sandbox_request

from autorl.errors import ConfigError
from autorl.types import Limits


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
