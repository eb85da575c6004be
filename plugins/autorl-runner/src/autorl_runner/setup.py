"""Before any agent: every component built (a typo fails first), then the task, model, runtime,
evaluator and contract prepared and checked. Each phase's state is one frozen object.

The task prepares into a cache keyed by its name, version, seed and options
(:func:`autorl.paths.task_cache_dir`), and the run then pins its splits: a private copy in the
run directory (:data:`PINNED_DIR`, outside the workspace) is what the workspace's ``data/`` is
copied from, what is hashed into the manifest and what every evaluation reads, so nothing that
happens to the cache later (another seed prepared, a task rewriting its files) reaches the run.

Under the ``sealed`` scoring protocol (docs/scoring.md) pinning also splits the held-out file in
two, deterministically (:func:`split_heldout`): ``eval/`` keeps the ``dev`` part (what every
evaluation during the agent's phase reads) and ``sealed/`` gets the ``test`` part, which nothing
opens before the agent's phase has ended.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import shutil
import sys
from dataclasses import dataclass, field, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from autorl.config import RunConfig, ScoringConfig
from autorl.contracts import prepared_contract
from autorl.digest import file_digest, installed_digest, json_digest
from autorl.errors import AutorlError, ConfigError
from autorl.options import OptionsModel, parse_options
from autorl.paths import cache_dir, task_cache_dir, task_cache_key
from autorl.registry import Registry
from autorl.types import Limits, ModelInfo, PreparedTask, TaskContext
from autorl_runner.console import RunConsole
from autorl_runner.engine import AgentEngine, agent_engine, engine_record
from autorl_runner.records_io import utc_now, write_json

SERVICES: dict[str, tuple[str, str]] = {
    "grader": ("api", "autorl-grading (checkpoint intake and the grading API)"),
    "runtime": ("harness", "autorl-sandbox-common (the agent runtime, the egress proxy)"),
    "gateway": ("llm", "autorl-llm (the drivers' layer and the metering gateway)"),
}
"""Harness services the engine reaches through the registry: kind -> (default component,
where from). The egress component is the one named like the run's ``[egress] policy``, when
it is not ``none``: see :func:`resolve`."""

PINNED_DIR = "task-data"
"""The run's copy of its splits, in the run directory: ``eval/`` (the directory holding the eval
split, copied whole: tasks refer to files next to it; under ``sealed`` its eval file holds the
dev part only), ``sealed/`` (``sealed`` only: the test part under the eval file's name, beside
links to everything else in ``eval/`` so relative paths resolve), ``train/`` (the train files)
and ``pinned.json`` (their names, written last: a copy without it never finished)."""
SEALED_DIR = "sealed"
SPLIT_SALT = "autorl-heldout-split"
"""Each held-out line's place in the split is sha256(f"{SPLIT_SALT}|{task}|{line}")."""
MAX_PINNED_BYTES = 4 * 1024**3
"""The most a run copies to pin its eval split's directory."""


@dataclass(frozen=True)
class Components:
    """What the run is made of, built from its config through the registry."""

    task: Any
    agent: Any
    sandbox: Any
    model: Any
    limits: Limits
    grader: Any
    runtime: Any
    """Builds the agent's Python environment (``AgentRuntime``)."""
    egress: Any = None
    """The agent's way out when the egress policy is not ``none`` (``Egress``)."""
    driver: Any = None
    llm_gateway: Any = None
    device: str = "auto"
    """Where the grader evaluates: ``config.device``, or a GPU that is not the agent's."""
    gpu_probe: Any = None
    """What meters the agent's GPUs (NVML), when it has any."""


@dataclass(frozen=True)
class Setup:
    """The prepared task and model, the agent runtime, the evaluator and the task's contract."""

    prepared: PreparedTask
    model_info: ModelInfo
    runtime: Any
    evaluator: Any
    evaluator_config: dict[str, Any]
    contract: Any
    contract_ref: str | None
    base_hash: str
    base_tree_hash: str
    hashes: dict[str, str]
    grader: Any
    """The grading component that fingerprinted the base model (and checks it at the end)."""
    split_sizes: dict[str, int] = field(default_factory=dict)
    """``{"dev": n, "test": n}`` under ``sealed``; empty under ``reference``."""
    agent_engine: AgentEngine | None = None
    """The inference engine the agent's runtime has (``agent_engine``), if any."""


RECORD_VERSION = 2
"""The run record's layout (``autorl_records`` reads every version; docs/architecture.md)."""


def resolve_model(registry: Registry, name: str) -> Any:
    """A registered model by name; a path or ``hf:org/name`` is the source of the ``hf`` model
    (autorl-hf), so a wrong path fails as a path, never as an unknown model name."""
    if not (name.startswith(("hf:", "/", ".", "~")) or Path(name).expanduser().is_dir()):
        return registry.create("model", name)
    if "hf" not in registry.names("model"):
        raise ConfigError(
            f"--model {name}: a model directory or hub id is read by the model 'hf', which no "
            "installed plugin provides",
            hint="pip install autorl-hf ('autorl plugins doctor' if it is installed)",
        )
    return registry.create("model", "hf", source=name)


def resolve(config: RunConfig, registry: Registry) -> Components:
    """Build every component first so a typo or a missing tool fails before any work; an
    error about a value from a config file names the file."""
    try:
        return _resolve(config, registry)
    except AutorlError as exc:
        key = _culprit(config, exc.message)
        if key is not None:
            first, sep, rest = exc.message.partition("\n")
            exc.message = first + config.origin(key) + sep + rest
        raise


def _culprit(config: RunConfig, message: str) -> str | None:
    """The config key (from a file) whose value the message is about, if any."""
    for key in ("agent_options", "task_options", "evaluator_options", "driver_options"):
        if config.origin(key) and any(repr(str(k)) in message for k in getattr(config, key)):
            return key
    for key in ("sandbox", "agent", "model", "driver", "task", "reports", "device"):
        value = getattr(config, key)
        values = value if isinstance(value, list) else [value]
        if config.origin(key) and any(v and repr(str(v)) in message for v in values):
            return key
    return "egress" if config.origin("egress") and "egress" in message else None


def _resolve(config: RunConfig, registry: Registry) -> Components:
    task = registry.create("task", config.task)
    agent = registry.create("agent", config.agent)
    sandbox = registry.create("sandbox", config.sandbox)
    check = getattr(sandbox, "check", None)
    if check is not None:
        check()  # a machine without the sandbox's tools fails here, never falls back
    model = resolve_model(registry, config.model)
    grader, runtime = service(registry, "grader"), service(registry, "runtime")
    egress = None
    if config.egress.policy != "none":  # a policy is the egress component of its name
        policy = config.egress.policy
        try:
            egress = registry.create("egress", policy)
        except AutorlError as exc:
            raise ConfigError(
                f"[egress] policy {policy!r} is neither 'none' nor an installed egress "
                f"component: {exc.message}",
                hint=f"{exc.hint or 'see autorl list egress'} (docs/security.md#egress)",
            ) from None
    for report in config.reports:
        registry.get("report", report)
    driver = gateway = None
    if config.driver:
        gateway = service(registry, "gateway", why=f"a run with a driver ({config.driver})")
        driver = gateway.open_driver(config.driver, dict(config.driver_options), registry)
    elif (registry.get("agent", config.agent).spec.options or {}).get("driver"):
        raise ConfigError(
            f"agent {config.agent!r} needs a driver LLM",
            hint="add --driver scripted/<script.yaml> (offline), openai/gpt-5.2 or "
            "anthropic/claude-sonnet-4-6 (key in the harness environment); see docs/agents.md",
        )
    limits = config.limits.resolve()
    probe, device = gpu_plan(config)
    check_run(config, registry, task, agent)
    return Components(
        task, agent, sandbox, model, limits, grader, runtime, egress, driver, gateway, device, probe
    )


def options_model(component: Any) -> type[OptionsModel] | None:
    """The options a component declares (``Options``, an :class:`OptionsModel`), if any."""
    model = getattr(component, "Options", None)
    return model if isinstance(model, type) and issubclass(model, OptionsModel) else None


def check_run(config: RunConfig, registry: Registry, task: Any, agent: Any) -> None:
    """Everything about the run's options checked before anything exists (no run directory,
    no baseline): the task's and the evaluator's options against the models they declare, the
    agent against the task and its options (``Agent.check``, else its ``Options``), the
    device against the machine. Used by ``autorl run`` and by a campaign's dry-run."""
    model = options_model(task)
    if model is not None:
        parse_options(model, config.task_options, who=f"task {config.task!r}")
    if config.evaluator_options:
        name = registry.get("task", config.task).spec.evaluator
        model = options_model(registry.create("evaluator", name)) if name else None
        unknown = sorted(set(config.evaluator_options) - set(model.model_fields if model else ()))
        if model is not None and unknown:
            raise ConfigError(
                f"evaluator {name!r}: unknown option(s) {', '.join(unknown)}",
                hint=f"options of {name!r}: {', '.join(sorted(model.model_fields))}",
            )
    if hasattr(agent, "check"):
        agent.check(config.task, dict(config.agent_options))
    elif (model := options_model(agent)) is not None:
        parse_options(model, config.agent_options, who=f"agent {config.agent!r}")
    check_device(config.device)


def check_device(device: str) -> None:
    """``auto``, ``cpu``, ``cuda`` or ``cuda:N``, and a CUDA device only where torch sees one
    (torch is imported only then)."""
    kind, _, index = device.partition(":")
    if kind not in ("auto", "cpu", "cuda") or (index and (kind != "cuda" or not index.isdigit())):
        close = difflib.get_close_matches(device, ["auto", "cpu", "cuda"], n=1)
        raise ConfigError(
            f"device {device!r} is not auto, cpu, cuda or cuda:N"
            + (f" (did you mean {close[0]!r}?)" if close else ""),
            hint="--device auto (a GPU when there is one), cpu, or cuda[:N]",
        )
    if kind == "cuda":
        import torch

        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count <= int(index or 0):
            raise ConfigError(
                f"device {device!r}: torch sees {count} CUDA device(s) on this machine",
                hint="use --device cpu or auto, or run where the GPU is",
            )


def gpu_plan(config: RunConfig) -> tuple[Any, str]:
    """The GPU probe (only when the run names GPUs) and the grader's device, checked against
    the machine before any work."""
    if not config.limits.gpus and not config.grader.gpus:
        return None, config.device
    from autorl_runner import gpus

    probe = gpus.load_probe()
    return probe, gpus.plan(config.limits.gpus, config.grader.gpus, config.device, probe)


def service(registry: Registry, kind: str, name: str = "", why: str = "every run") -> Any:
    """A harness service (:data:`SERVICES`) built through the registry; its absence fails
    before any work, naming the distribution that provides it."""
    default, where = SERVICES[kind]
    try:
        return registry.create(kind, name or default)
    except AutorlError as exc:
        raise ConfigError(
            f"{why} needs the {kind} {name or default!r}: {exc.message}",
            hint=f"pip install {where}",
        ) from None


def prepare(
    config: RunConfig,
    registry: Registry,
    parts: Components,
    console: RunConsole,
    run_dir: Path | None = None,
) -> Setup:
    """Prepare the task, model, evaluator and runtime; with ``run_dir``, the splits are pinned
    there (:func:`pin_splits`) and everything after reads the pinned copy."""
    task = parts.task
    version = str(getattr(task, "version", "0"))
    task_cache = task_cache_dir(task.name, version, config.seed, config.task_options)
    console.print(f"preparing task [bold]{task.name}[/] and model [bold]{config.model}[/]")
    stage = console.stages("preparing", ["task", "model", "evaluator", "runtime", "hashes"])
    stage("task")
    prepared = task.prepare(
        TaskContext(cache_dir=task_cache, seed=config.seed, options=config.task_options)
    )
    if any(p.resolve() == prepared.eval_path.resolve() for p in prepared.train_files):
        raise AutorlError(f"task {task.name!r} lists its eval split as a train file")
    pinned_record: dict[str, Any] = {}
    if run_dir is not None:
        prepared = pin_splits(prepared, run_dir, task.name, config.scoring)
        pinned_record = pinned_info(run_dir)
    stage("model")
    model_info = parts.model.materialize(cache_dir("models"))
    stage("evaluator")
    evaluator = registry.create("evaluator", prepared.evaluator)
    contract_ref, contract = prepared_contract(registry, config.task, prepared)
    evaluator_config = {
        **dict(prepared.evaluator_config),
        **config.evaluator_options,
        "device": parts.device,
    }
    check = getattr(evaluator, "check_config", None)
    if check is not None:  # a typo in an evaluator option fails here, before the baseline
        check(dict(evaluator_config), contract)
    stage("runtime")
    runtime = parts.runtime.build(prepared.kit_requires)
    engine = agent_engine(config.agent_engine)
    stage("hashes")
    base_hash, base_tree_hash = parts.grader.fingerprint(model_info.path)
    stage(None)
    return Setup(
        prepared=prepared,
        model_info=model_info,
        runtime=runtime,
        evaluator=evaluator,
        evaluator_config=evaluator_config,
        contract=contract,
        contract_ref=contract_ref,
        base_hash=base_hash,
        base_tree_hash=base_tree_hash,
        hashes={
            "train": file_digest(prepared.train_files),
            "eval": split_digest(prepared.eval_path),
            **({"test": pinned_record["test_digest"]} if pinned_record.get("test_digest") else {}),
            "base_model": base_hash,
            "base_model_files": base_tree_hash,
        },
        grader=parts.grader,
        split_sizes=dict(pinned_record.get("split_sizes") or {}),
        agent_engine=engine,
    )


def pin_splits(
    prepared: PreparedTask, run_dir: Path, task: str, scoring: ScoringConfig | None = None
) -> PreparedTask:
    """The prepared task with its eval split and train files replaced by the run's own copy in
    ``run_dir/task-data`` (made now, or kept as it is when a resumed run already has one).

    Under ``scoring.protocol == "sealed"`` the returned ``eval_path`` is the dev part and
    ``test_path`` the sealed test part (a path only: the file is not opened here). ``scoring``
    None means ``reference`` (nothing split), as do run directories pinned before the split."""
    pinned = run_dir / PINNED_DIR
    record = pinned / "pinned.json"
    if not record.is_file():
        _copy_splits(prepared, pinned, task, scoring)
    try:
        names = json.loads(record.read_text(encoding="utf-8"))
        eval_path = pinned / "eval" / str(names["eval"])
        train_files = tuple(pinned / "train" / str(name) for name in names["train"])
        sealed = names.get("sealed")
        test_path = pinned / SEALED_DIR / str(sealed) if sealed else None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise AutorlError(
            f"the run's pinned task data {record} is unreadable ({exc})",
            hint="the run directory was changed by hand: start a new run",
        ) from None
    # the sealed file's existence is checked without opening it
    missing = [p for p in (eval_path, *train_files, test_path) if p and not p.exists()]
    if missing:
        raise AutorlError(
            f"the run's pinned task data is incomplete: {missing[0]} is missing",
            hint="the run directory was changed by hand: start a new run",
        )
    return replace(prepared, eval_path=eval_path, train_files=train_files, test_path=test_path)


def pinned_info(run_dir: Path) -> dict[str, Any]:
    """What ``pinned.json`` records about the split: ``protocol``, ``split_sizes``,
    ``test_digest`` (all absent for a run pinned before the split: read as ``reference``)."""
    try:
        data = json.loads((run_dir / PINNED_DIR / "pinned.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def split_heldout(data: bytes, task: str, share: float) -> tuple[bytes, bytes, int, int]:
    """``(dev, test, n_dev, n_test)`` of a JSON-lines file: each non-blank line's key is
    sha256(``"autorl-heldout-split|<task>|" + line``); the first ``round(n * share)`` lines by
    key (at least 1, at most n - 1) are test, the rest dev; each part keeps the file's order.
    Deterministic and independent of the seed, so every run of a task on the same held-out
    data seals the same examples (and the baseline's cache entry is shared)."""
    lines = [line for line in data.split(b"\n") if line.strip()]
    n = len(lines)
    if n < 2:
        raise ConfigError(
            f"task {task!r}: its held-out split has {n} example(s); the sealed protocol needs "
            "at least 2 (one dev, one test)",
            hint='use a larger eval_size, or [scoring] protocol = "reference" in a --config file',
        )
    salt = f"{SPLIT_SALT}|{task}|".encode()
    order = sorted(range(n), key=lambda i: (hashlib.sha256(salt + lines[i]).digest(), i))
    n_test = min(max(round(n * share), 1), n - 1)
    test = set(order[:n_test])
    dev_lines = [line for i, line in enumerate(lines) if i not in test]
    test_lines = [line for i, line in enumerate(lines) if i in test]
    return b"\n".join(dev_lines) + b"\n", b"\n".join(test_lines) + b"\n", n - n_test, n_test


def _bytes_digest(name: str, data: bytes) -> str:
    """:func:`autorl.digest.file_digest` of a file named ``name`` holding ``data``, computed
    from the bytes being written (so hashing the sealed split never opens it)."""
    return json_digest([[name, hashlib.sha256(data).hexdigest()]])


def _seal(
    prepared: PreparedTask, staging: Path, task: str, scoring: ScoringConfig
) -> dict[str, Any]:
    """Split the staged eval file into dev (in place) and test (``sealed/``); the record's
    fields for ``pinned.json``."""
    name = Path(prepared.eval_path).name
    eval_file = staging / "eval" / name
    share = scoring.test_share if scoring.test_share is not None else prepared.test_share
    if not 0 < share < 1:
        raise ConfigError(
            f"task {task!r}: test_share {share} is not between 0 and 1",
            hint="set scoring.test_share (or the task's PreparedTask.test_share) in (0, 1)",
        )
    if prepared.test_path is not None:  # the task ships its own sealed split
        sealed_name = Path(prepared.test_path).name
        test = Path(prepared.test_path).read_bytes()
        dev = eval_file.read_bytes()
        n_dev = sum(1 for line in dev.split(b"\n") if line.strip())
        n_test = sum(1 for line in test.split(b"\n") if line.strip())
    else:
        sealed_name = name
        dev, test, n_dev, n_test = split_heldout(eval_file.read_bytes(), task, share)
        eval_file.write_bytes(dev)
    sealed = staging / SEALED_DIR
    sealed.mkdir()
    (sealed / sealed_name).write_bytes(test)
    for entry in (staging / "eval").iterdir():  # relative paths (ALFWorld's games) resolve
        if entry.name not in (name, sealed_name):
            (sealed / entry.name).symlink_to(Path("..") / "eval" / entry.name)
    return {
        "sealed": sealed_name,
        "test_share": share,
        "split_sizes": {"dev": n_dev, "test": n_test},
        "test_digest": _bytes_digest(sealed_name, test),
    }


def _copy_splits(
    prepared: PreparedTask, pinned: Path, task: str, scoring: ScoringConfig | None = None
) -> None:
    """Copy the eval split's directory and the train files (and seal the test part), then write
    ``pinned.json`` and move the whole copy into place, so a half-made copy is never taken for
    the run's."""
    source = Path(prepared.eval_path).parent
    size = _tree_bytes(source, MAX_PINNED_BYTES)
    if size > MAX_PINNED_BYTES:
        raise ConfigError(
            f"task {task!r}: the directory of its eval split, {source}, holds more than "
            f"{MAX_PINNED_BYTES / 1024**3:.0f} GiB; the run copies it to pin the split",
            hint="write the splits into a directory of their own under ctx.cache_dir, "
            "apart from downloads and other large files",
        )
    staging = pinned.with_name(PINNED_DIR + ".partial")
    for stale in (staging, pinned):
        if stale.exists():
            shutil.rmtree(stale)
    shutil.copytree(source, staging / "eval", symlinks=False)
    (staging / "train").mkdir()
    for src in prepared.train_files:
        shutil.copyfile(src, staging / "train" / Path(src).name)
    protocol = scoring.protocol if scoring is not None else "reference"
    names: dict[str, Any] = {
        "eval": Path(prepared.eval_path).name,
        "train": [Path(p).name for p in prepared.train_files],
        "source": str(source),
        "pinned": utc_now(),
        "protocol": protocol,
    }
    if protocol == "sealed":
        names.update(_seal(prepared, staging, task, scoring))  # type: ignore[arg-type]
    write_json(staging / "pinned.json", names)
    os.replace(staging, pinned)


def _tree_bytes(root: Path, stop: int) -> int:
    """Bytes of the files under ``root`` (links followed, as the copy does), counted up to
    just past ``stop``."""
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            try:
                total += os.stat(os.path.join(dirpath, name)).st_size
            except OSError:
                continue
            if total > stop:
                return total
    return total


def split_digest(path: Path) -> str:
    """A split's hash: the file's (name and bytes), or for a directory every file under it by
    its relative path."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file())
        return file_digest(files, base=path)
    return file_digest([path])


def sandbox_info(config: RunConfig, sandbox: Any) -> dict[str, Any]:
    describe = getattr(sandbox, "describe", None)
    info = dict(describe()) if describe else {"name": config.sandbox}
    info.setdefault("isolated", bool(getattr(sandbox, "isolated", False)))
    info["limits"] = config.limits.model_dump(mode="json")
    info["egress"] = config.egress.model_dump(mode="json")
    return info


def write_manifest(
    run_dir: Path,
    run_id: str,
    config: RunConfig,
    registry: Registry,
    parts: Components,
    setup: Setup,
) -> None:
    """Everything that defines the run, written before any agent runs."""
    prepared = setup.prepared
    write_json(
        run_dir / "manifest.json",
        {
            "record_version": RECORD_VERSION,
            "run_id": run_id,
            "created": utc_now(),
            "config": config.model_dump(mode="json"),
            "versions": versions(registry),
            "lock": installed_digest(),
            "hashes": setup.hashes,
            "task": {
                "name": parts.task.name,
                "version": str(getattr(parts.task, "version", "0")),
                "split": prepared.split,
                "metric": prepared.metric,
                "evaluator": prepared.evaluator,
                "evaluator_config": setup.evaluator_config,
                "contract": setup.contract_ref,
                "cache_key": task_cache_key(config.seed, config.task_options),
                "eval_path": _shown(prepared.eval_path, run_dir),
                "protocol": config.scoring.protocol,
                **({"split_sizes": setup.split_sizes} if setup.split_sizes else {}),
            },
            "model": {"name": config.model, "path": str(setup.model_info.path)},
            "engine": engine_record(config),
            "sandbox": sandbox_info(config, parts.sandbox),
            "runtime": {
                "path": str(setup.runtime.root),
                "distributions": list(setup.runtime.distributions),
                "engine": setup.agent_engine.record() if setup.agent_engine else None,
            },
        },
    )


def _shown(path: Path, run_dir: Path) -> str:
    """A path relative to the run directory when it is inside (the pinned splits)."""
    try:
        return Path(path).relative_to(run_dir).as_posix()
    except ValueError:
        return str(path)


def versions(registry: Registry) -> dict[str, str]:
    found = {"autorl": _dist_version("autorl"), "python": sys.version.split()[0]}
    for plugin in registry.plugins:
        if plugin.distribution and plugin.version:
            found[plugin.distribution] = plugin.version
    for lib in ("torch", "transformers", "trl", "peft"):
        found[lib] = _dist_version(lib)
    return {k: v for k, v in found.items() if v}


def _dist_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None
