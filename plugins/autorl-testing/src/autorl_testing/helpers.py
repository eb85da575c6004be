"""Helpers shared by the conformance classes, the pytest fixtures and the repo's own tests."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autorl.registry import Registry
    from autorl.types import AgentContext

HEAVY_MODULES: tuple[str, ...] = (
    "torch",
    "transformers",
    "vllm",
    "trl",
    "peft",
    "deepspeed",
    "openai",
    "anthropic",
    "ray",
)
"""Libraries that must never be imported by a hookimpl module or by CLI start-up."""

_PROBE = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
heavy = json.loads(sys.argv[2])
print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
"""


def heavy_modules_imported_by(module: str, heavy: tuple[str, ...] = HEAVY_MODULES) -> list[str]:
    """Import ``module`` in a fresh interpreter and return the heavy libraries it pulled in.

    A subprocess is the only honest check: in the test process something else may already have
    imported torch.
    """
    # The child sees what this process can import (modules put on sys.path by a conftest too).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, module, json.dumps(list(heavy))],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    if proc.returncode != 0:
        raise AssertionError(
            f"importing {module!r} in a fresh interpreter failed:\n{proc.stderr.strip()}"
        )
    return list(json.loads(proc.stdout.strip().splitlines()[-1]))


def run_pytest(
    target: str, cwd: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """``pytest -q target`` in a fresh interpreter in ``cwd`` with exactly ``env`` (no cache
    written): how a test checks that a whole suite passes or fails."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", target],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


_TASK_PLUGIN = """
import json
import random
from autorl import hookimpl
from autorl.specs import TaskSpec
from autorl.types import PreparedTask


@hookimpl
def autorl_register_tasks():
    return [TaskSpec(name={name!r}, factory={factory!r}, description="d")]


class Task:
    name = {name!r}
    version = "1"

    def prepare(self, ctx):
{body}
        return PreparedTask(train_files=(train,), eval_path=eval_path, description="d",
                            evaluator="exact")
"""


def task_plugin_source(name: str, module: str, prepare: str) -> str:
    """A one-file task plugin ``module`` registering the task ``name``, for tests of the
    conformance kit: ``prepare`` is the body of its ``prepare(self, ctx)`` up to the split it
    returns (it must bind ``train`` and ``eval_path``; ``json`` and ``random`` are imported)."""
    body = textwrap.indent(textwrap.dedent(prepare).strip("\n"), " " * 8)
    return _TASK_PLUGIN.format(name=name, factory=f"{module}:Task", body=body)


def load_module(module: ModuleType | str) -> ModuleType:
    """Accept a module or its import name."""
    return importlib.import_module(module) if isinstance(module, str) else module


def plugin_name_of(module: ModuleType) -> str:
    """The name a plugin gets when registered in-process: its top-level package, dashed."""
    return module.__name__.split(".")[0].replace("_", "-")


def registry_with(*modules: ModuleType | str, builtins: bool = False, **named: Any) -> Registry:
    """A fresh registry holding only the given hookimpl modules (and the built-ins if asked).

    Positional modules are named after their top-level package (``autorl_task_x`` becomes
    ``autorl-task-x``); keyword arguments give explicit names: ``registry_with(mine=module)``.
    """
    from autorl.registry import Registry

    registry = Registry.empty()
    if builtins:
        registry.register(load_module("autorl.builtins"), "autorl")
    for module in modules:
        loaded = load_module(module)
        registry.register(loaded, plugin_name_of(loaded))
    for name, module in named.items():
        registry.register(load_module(module), name)
    return registry


def agent_context(root: Path, **fields: Any) -> AgentContext:
    """A run-like :class:`~autorl.types.AgentContext` under ``root``, to test an agent's
    ``launch`` without a run: ``root/workspace`` with ``code/ data/ output/ models/`` and a
    ``description.md`` (kept when there is one), HOME ``root/home``, loopback URLs that lead
    nowhere, and the gateway's URL only when a ``driver`` is given. Any field can be overridden.
    """
    from autorl.types import AgentContext

    workspace = Path(fields.pop("workspace", root / "workspace"))
    for sub in ("code", "data", "output", "models"):
        (workspace / sub).mkdir(parents=True, exist_ok=True)
    description = fields.setdefault("description", "Train the model.")
    if not (workspace / "description.md").exists():
        (workspace / "description.md").write_text(description + "\n", encoding="utf-8")
    defaults: dict[str, Any] = {
        "home": workspace.parent / "home",
        "task": "gsm8k",
        "instructions": "# Instructions\nSubmit to the grading API.",
        "grader_url": "http://127.0.0.1:5000",
        "token": "run-token",
        "budget_seconds": 300.0,
        "max_submissions": 3,
        "python": sys.executable,
    }
    if fields.get("driver"):
        defaults["gateway_url"] = "http://127.0.0.1:6000"
    return AgentContext(workspace=workspace, **{**defaults, **fields})


def evaluate_prepared(
    task: str, prepared: Any, model_dir: Path, work_dir: Path, **config: Any
) -> Any:
    """``prepared``'s evaluator (from the process's registry) scoring ``model_dir`` on its eval
    split as a run's grader calls it: the task's contract, the task's evaluator config with
    ``config`` over it. Returns the evaluator's result."""
    from autorl.contracts import prepared_contract
    from autorl.registry import get_registry
    from autorl.types import EvalRequest

    registry = get_registry()
    _, contract = prepared_contract(registry, task, prepared)
    request = EvalRequest(
        model_dir=model_dir,
        eval_path=prepared.eval_path,
        config={**prepared.evaluator_config, **config},
        work_dir=work_dir,
        contract=contract,
    )
    return registry.create("evaluator", prepared.evaluator).evaluate(request)
