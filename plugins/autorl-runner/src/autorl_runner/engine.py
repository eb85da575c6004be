"""The run's inference engine and its precision: set for the run's evaluations, resolved once.

The model layer (``autorl_hf``) reads two variables at each evaluation:
``$AUTORL_GENERATION_BACKEND`` (the engine) and ``$AUTORL_ENGINE_PRECISION`` (its precision).
A run sets them from its config (``engine``, ``engine_precision``), resolves ``auto``
precision here, once, before the manifest is written (so the baseline, every submission and
the baseline cache's key use the same precision, and nothing measures mid-run), and records
what it asked for and what it resolved in the manifest's ``engine`` block. What really graded
(the engine, its version and precision) is in each evaluation's ``metrics.engine`` and, from
the baseline, in ``run.json``'s ``engine``.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl.config import ENGINE_PRECISION_ENV as PRECISION_ENV
from autorl.config import ENGINE_PRECISION_REASON_ENV as REASON_ENV
from autorl.config import ENGINE_PRECISIONS, RunConfig
from autorl.config import GENERATION_BACKEND_ENV as BACKEND_ENV
from autorl.config import PRECISION_NOT_APPLICABLE as NOT_APPLICABLE
from autorl.errors import ConfigError


def apply_engine(config: RunConfig, recorded: dict[str, Any] | None = None) -> None:
    """Set the run's engine and precision for its evaluations (this process's environment,
    which graders inherit). ``recorded``: a resumed run's manifest ``engine`` block, whose
    resolved precision is kept (its baseline was graded in it)."""
    if config.engine is not None:
        os.environ[BACKEND_ENV] = config.engine
    if config.engine_precision is not None:
        os.environ[PRECISION_ENV] = config.engine_precision
    raw = os.environ.get(PRECISION_ENV, "").strip().lower()
    if raw and raw not in ENGINE_PRECISIONS:
        raise ConfigError(
            f"${PRECISION_ENV}={os.environ[PRECISION_ENV]!r} is not an engine precision",
            hint="unset it, or use fp32 (the default), bf16 or auto; or give the run "
            "--engine-precision (docs/engine.md)",
        )
    if raw != "auto" or _backend() == "transformers":
        os.environ.pop(REASON_ENV, None)
        return
    if recorded and recorded.get("precision") in ("fp32", "bf16") and recorded.get("reason"):
        os.environ[PRECISION_ENV] = recorded["precision"]
        os.environ[REASON_ENV] = str(recorded["reason"])
        return
    try:  # the model layer measures; without it there is no engine to set a precision for
        from autorl_hf.engine.precision import pinned_env, resolve_precision
    except ImportError:
        return
    os.environ.update(pinned_env(resolve_precision("auto")))


def _backend() -> str:
    return os.environ.get(BACKEND_ENV, "").strip().lower()


def engine_record(config: RunConfig) -> dict[str, Any]:
    """The manifest's ``engine`` block: the engine and precision the run asked for, the
    precision it resolved (and why), or why precision does not apply."""
    backend = _backend() or "default"
    setting = os.environ.get(PRECISION_ENV, "").strip().lower()
    reason = os.environ.get(REASON_ENV, "").strip()
    asked = config.engine_precision or ("auto" if reason else setting) or "fp32"
    record: dict[str, Any] = {"backend": backend, "precision_setting": asked}
    if backend == "transformers":
        record["precision"] = "fp32"
        if asked != "fp32":
            record["note"] = NOT_APPLICABLE
        return record
    record["precision"] = setting or "fp32"
    if reason:
        record["reason"] = reason
    elif asked == "auto":
        record["reason"] = "unresolved: the model layer (autorl-hf) is not installed"
    elif setting:
        record["reason"] = "set explicitly"
    else:
        record["reason"] = "the default"
    if backend == "default":
        record["note"] = (
            "the default engine is transformers on CPU (fp32; the precision applies to the "
            "vLLM CPU engine) and vLLM on a GPU when installed"
        )
    return record


def record_grader(run_info: dict[str, Any], baseline: dict[str, Any]) -> None:
    """``run.json``'s ``engine``: what graded the baseline (name, version, precision), as its
    evaluation recorded it; nothing for an evaluator that records no engine."""
    graded_by = (baseline.get("metrics") or {}).get("engine")
    if isinstance(graded_by, dict):
        run_info["engine"] = graded_by


AGENT_ENGINE_ENV = "AUTORL_VLLM_PYTHON"
"""The agent's variable naming the engine environment's interpreter, when its runtime has one."""


@dataclass(frozen=True)
class AgentEngine:
    """The vLLM environment an agent may use for its own rollouts (as TRL's vLLM mode does):
    the harness's engine build, shown read-only inside the sandbox. The agent starts its own
    server from it, in its sandbox, on its cores; nothing of the harness's engines is shared."""

    python: Path
    root: Path
    base_prefix: Path
    """The interpreter installation the environment's ``python`` points at."""
    name: str
    version: str

    @property
    def read_only(self) -> tuple[Path, ...]:
        return (self.root, self.base_prefix)

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "python": str(self.python)}


def agent_engine(setting: str) -> AgentEngine | None:
    """The engine an agent's runtime gets under the run's ``agent_engine`` setting: ``none``
    gives none, ``auto`` the built one if any, ``vllm`` the built one or a ConfigError."""
    if setting == "none":
        return None
    try:  # the model layer builds it; without it there is no engine to give
        from autorl_hf.engine.env import find_engine
    except ImportError:
        found = None
    else:
        found = find_engine()
    if found is None:
        if setting == "vllm":
            raise ConfigError(
                "agent_engine = 'vllm' gives the agent's runtime the vLLM CPU engine, which "
                "is not built on this machine",
                hint="build it once with `autorl engine prepare`, or set --agent-engine auto "
                "(the runtime then has it only where it is built) or none",
            )
        return None
    root = found.root.resolve()  # the path a sandbox mounts, not a symlink to it
    return AgentEngine(
        python=root / "bin" / "python",
        root=root,
        base_prefix=_venv_home(found.root),
        name=found.name,
        version=found.version,
    )


def _venv_home(root: Path) -> Path:
    """The installation a venv's interpreter belongs to (``home`` of its pyvenv.cfg, less
    ``bin``); the running interpreter's when the file says nothing usable."""
    try:
        for line in (root / "pyvenv.cfg").read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                return Path(value.strip()).resolve().parent
    except OSError:
        pass
    return Path(sys.base_prefix)
