"""The agent runtime (the training stack, never the harness) and trajectory copies without
links: pieces of the boundary the sandboxes share."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from autorl_sandbox_common.agentfiles import copy_agent_file
from autorl_sandbox_common.runtime import _installed, build_runtime, closure

from autorl.errors import ConfigError


@pytest.mark.e2e  # builds agent runtimes (a venv each)
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


@pytest.mark.e2e  # builds agent runtimes (a venv each)
def test_runtime_adds_the_kit_requirements_and_refuses_unknown_ones(tmp_path: Path) -> None:
    runtime = build_runtime(["rank-bm25"], cache=tmp_path)
    assert "rank-bm25" in runtime.distributions
    with pytest.raises(ConfigError, match="pip install no-such-dist"):
        build_runtime(["no-such-dist"], cache=tmp_path)


def test_closure_follows_requirements_but_never_autorl() -> None:
    found = closure(["transformers", "autorl-task-gsm8k"], _installed())
    assert "tokenizers" in found and "huggingface-hub" in found
    assert not [d for d in found if d.startswith("autorl")]


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


def test_closure_follows_requested_extras() -> None:
    """``textworld[pddl]`` brings the planner ALFWorld's engine needs; plain ``textworld`` not."""
    installed = _installed()
    if "textworld" not in installed:
        pytest.skip("textworld not installed")
    assert "fast-downward-textworld" in closure(["textworld[pddl]"], installed)
    assert "fast-downward-textworld" not in closure(["textworld"], installed)


def test_a_modules_bytecode_comes_along_even_when_record_does_not_list_it(
    tmp_path: Path,
) -> None:
    """An install that compiled after the fact (``pip --no-compile`` then ``compileall``, or uv)
    lists no ``.pyc`` in RECORD; the read-only runtime must still get the bytecode, or every
    agent process compiles the module again at each import."""
    import importlib.util
    import py_compile
    from types import SimpleNamespace

    from autorl_sandbox_common.runtime import _populate, _site_packages

    site = tmp_path / "harness"
    module = site / "pkg" / "mod.py"
    module.parent.mkdir(parents=True)
    module.write_text("X = 1\n")
    py_compile.compile(str(module), cfile=importlib.util.cache_from_source(str(module)))
    dist = SimpleNamespace(files=["pkg/mod.py"], locate_file=lambda entry: site / str(entry))
    staging = tmp_path / "runtime"
    _populate(staging, ["pkg"], {"pkg": dist})  # type: ignore[dict-item]
    linked = Path(importlib.util.cache_from_source(str(_site_packages(staging) / "pkg/mod.py")))
    assert linked.is_file()
    assert os.stat(linked).st_ino == os.stat(importlib.util.cache_from_source(str(module))).st_ino
