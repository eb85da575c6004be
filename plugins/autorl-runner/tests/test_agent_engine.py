"""The inference engine in the agent's runtime (``agent_engine``, issue #33 item 4): given where
it is built and asked for, never where it is not, a precise error when ``vllm`` demands one
that is missing, named in the agent's instructions. Nothing starts an engine here (the run
that uses one: tests/test_run_on_engine.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from autorl_hf.engine import env as engine_env
from autorl_runner.engine import AGENT_ENGINE_ENV, agent_engine
from autorl_runner.workspace import instructions
from click.testing import CliRunner

from autorl.cli.main import cli
from autorl.config import validate_config
from autorl.errors import ConfigError


def built(monkeypatch: pytest.MonkeyPatch, root: Path | None) -> None:
    """The engine environment is built at ``root`` (None: not built)."""
    found = None
    if root is not None:
        found = engine_env.EngineEnv(root=root, versions={"vllm": "0.32.0"}, built_s=1.0,
                                     size_bytes=1)  # fmt: skip
    monkeypatch.setattr(engine_env, "find_engine", lambda: found)


def test_a_built_engine_is_given_read_only_with_its_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "engines" / "vllm-cpu"
    (root / "bin").mkdir(parents=True)
    base = tmp_path / "python-3.11"
    (root / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\nversion = 3.11.7\n")
    built(monkeypatch, root)
    for setting in ("auto", "vllm"):
        engine = agent_engine(setting)
        assert engine is not None
        assert engine.python == root.resolve() / "bin" / "python"
        # the environment and the installation its interpreter links to: the sandbox shows both
        assert engine.read_only == (root.resolve(), base.resolve())
        assert engine.record() == {"name": "vllm-cpu", "version": "0.32.0",
                                   "python": str(engine.python)}  # fmt: skip
    assert agent_engine("none") is None


def test_no_engine_is_none_under_auto_and_an_error_under_vllm(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built(monkeypatch, None)
    assert agent_engine("auto") is None and agent_engine("none") is None
    with pytest.raises(ConfigError) as info:
        agent_engine("vllm")
    assert "not built on this machine" in info.value.message
    assert "autorl engine prepare" in (info.value.hint or "")


def test_the_setting_is_validated_and_on_the_command_line() -> None:
    with pytest.raises(ConfigError) as info:
        validate_config({"agent_engine": "sglang"}, None)
    assert "agent_engine: 'auto', 'vllm' or 'none' (got 'sglang')" in info.value.message
    result = CliRunner().invoke(cli, ["run", "--agent-engine", "sglang"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "'sglang' is not one of 'auto', 'vllm', 'none'" in result.output


def test_the_instructions_name_the_engine_only_when_the_runtime_has_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "vllm-cpu"
    (root / "bin").mkdir(parents=True)
    built(monkeypatch, root)
    grading = {"budget": "", "api": "## API", "score": "## Score"}
    common = {"task": "webshop", "metric": "success_rate", "budget_seconds": 60.0,
              "has_kit": True, "grading": grading}  # fmt: skip
    with_engine = instructions(**common, engine=agent_engine("auto"))
    assert f"${AGENT_ENGINE_ENV}" in with_engine and "vllm-cpu 0.32.0" in with_engine
    assert f"${AGENT_ENGINE_ENV}" not in instructions(**common)
