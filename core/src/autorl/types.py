"""Plain data passed between the run engine and plugins.

Frozen dataclasses, standard library only, so plugin authors can build and test them without the
engine. Fields may be added over time; plugins should construct them with keyword arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ProgressFn = Callable[[int, int], None]
"""``progress(done, total)``: called by long operations so the CLI can draw a bar."""


@dataclass(frozen=True)
class TaskContext:
    """What a task needs to prepare its assets."""

    cache_dir: Path
    """A directory owned by this task (and version) in the user cache; reused across runs."""
    seed: int = 0
    options: Mapping[str, Any] = field(default_factory=dict)
    """``[task_options]`` of the run config, e.g. ``{"data_path": ".../gsm8k"}``."""


@dataclass(frozen=True)
class PreparedTask:
    """A task's assets on disk: the agent-visible train split and the grader-only eval split."""

    train_files: tuple[Path, ...]
    """Copied into ``workspace/data`` (read-only). Never contains an eval example."""
    eval_path: Path
    """JSON lines, one eval example per line; stays outside the workspace."""
    description: str
    """Markdown shown to the agent as ``description.md``."""
    evaluator: str
    """Registry name of the evaluator that scores checkpoints for this task."""
    evaluator_config: Mapping[str, Any] = field(default_factory=dict)
    kit_dir: Path | None = None
    """A directory whose files are copied into ``workspace/kit`` (train loader, train reward)."""
    split: str = "offline"
    """Which data this is (``offline``, ``reference``...), recorded in the manifest and report."""
    metric: str = "accuracy"
    contract: str | None = None
    """This run's implementation of the evaluator's contract (``"pkg.module[:object]"``);
    None: the one the task's spec names."""
    kit_requires: tuple[str, ...] = ()
    """Distributions the kit imports beyond the training stack (``rank-bm25``...): the agent
    runtime gets them (and their dependencies), copied from the harness's environment."""
    test_share: float = 0.5
    """The share of the held-out split sealed as ``test`` under the ``sealed`` protocol (the
    rest is ``dev``, the agent's feedback); ``scoring.test_share`` overrides it."""
    test_path: Path | None = None
    """A sealed test split the task ships itself (JSON lines, beside its own files as
    ``eval_path`` is); None: the engine splits ``eval_path`` (docs/scoring.md)."""


@dataclass(frozen=True)
class EvalRequest:
    """One evaluation of one model directory on the eval split."""

    model_dir: Path
    eval_path: Path
    config: Mapping[str, Any]
    work_dir: Path
    """Harness-owned scratch directory for details (per-example outputs, trajectories)."""
    seed: int = 0
    progress: ProgressFn | None = None
    contract: Any = None
    """The task's implementation of the evaluator's contract, loaded and checked by the engine
    (:func:`autorl.contracts.load_contract`)."""
    base_model_dir: Path | None = None
    """The base model: a LoRA adapter submission (``adapter_config.json`` in ``model_dir``) is
    merged onto it by the model layer (``autorl_hf.generation.Generator``) before scoring."""


@dataclass(frozen=True)
class EvalResult:
    """Score in percent (0-100) plus any metrics the evaluator wants in the report."""

    score: float
    n: int
    metrics: Mapping[str, Any] = field(default_factory=dict)
    details_path: Path | None = None


@dataclass(frozen=True)
class AgentContext:
    """Everything an agent adapter may know about its run. Nothing here is secret to the harness."""

    workspace: Path
    home: Path
    task: str
    description: str
    instructions: str
    grader_url: str
    token: str
    budget_seconds: float
    max_submissions: int
    seed: int = 0
    driver: str | None = None
    gateway_url: str | None = None
    python: str = "python3"
    """Interpreter with the training stack (torch, transformers, trl, peft) installed."""
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AgentLaunch:
    """How to start an agent: the only environment it gets is ``env`` plus the sandbox basics."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    read_only: tuple[Path, ...] = ()
    """Host paths the agent's program needs besides the workspace and the agent runtime (a CLI's
    install directory, its interpreter's prefix). Namespace sandboxes show them read-only at the
    same path and nothing else of the host."""


@dataclass(frozen=True)
class Forward:
    """A loopback port the agent is told about (``http://127.0.0.1:PORT``), which the harness
    also serves on a unix socket. A sandbox with its own network namespace listens on
    ``127.0.0.1:port`` inside and relays each connection to ``socket``."""

    name: str
    port: int
    socket: Path


@dataclass(frozen=True)
class Limits:
    """Resource limits of the agent's processes (``None``: not limited)."""

    memory_bytes: int | None = None
    pids: int | None = None
    cpus: float | None = None
    gpus: tuple[str, ...] = ()
    """GPU indices the agent may use (device nodes + ``CUDA_VISIBLE_DEVICES``); none by default."""


@dataclass(frozen=True)
class SandboxRequest:
    """Everything a sandbox needs to start the agent. Paths are host paths; namespace sandboxes
    mount each at the same path, so a path (or a symlink) means the same inside and out."""

    launch: AgentLaunch
    workspace: Path
    """Read-write, the agent's working directory (except ``read_only_inside``)."""
    home: Path
    """Read-write, the agent's HOME."""
    log_path: Path
    """Harness-owned file that receives the agent's stdout and stderr (size-capped)."""
    state_dir: Path
    """Harness-owned directory for the sandbox's own files (sockets, supervisor settings)."""
    read_only: tuple[Path, ...] = ()
    """Host paths shown read-only (the agent runtime, its interpreter, the base model...)."""
    read_only_inside: tuple[Path, ...] = ()
    """Paths inside ``workspace`` that stay read-only (``data/``, ``kit/``)."""
    forwards: tuple[Forward, ...] = ()
    limits: Limits = field(default_factory=Limits)
    run_id: str = ""


@dataclass(frozen=True)
class ModelInfo:
    """A base model materialised as a Hugging Face directory."""

    name: str
    path: Path
    description: str = ""


TOKENIZER_VOCAB_FILES = (
    "tokenizer.json",
    "tokenizer.model",
    "vocab.json",
    "vocab.txt",
    "spiece.model",
)
"""The files that hold a tokenizer's vocabulary: a full checkpoint needs at least one."""

TOKENIZER_FILE_NAMES = frozenset(
    {
        *TOKENIZER_VOCAB_FILES,
        "tokenizer_config.json",
        "special_tokens_map.json",
        "added_tokens.json",
        "chat_template.jinja",
        "chat_template.json",
        "merges.txt",
    }
)
"""Every tokenizer file a model directory can hold: what the grader copies into a graded
directory and what decides, beside the config, whether one engine can serve two models."""


@dataclass(frozen=True)
class CheckpointInfo:
    """What intake learned of a submitted checkpoint, handed to the evaluation with its copy."""

    kind: str
    """``full`` (a complete model) or ``lora`` (a PEFT adapter to merge onto the base)."""
    weight_files: tuple[str, ...]
    weight_hash: str
