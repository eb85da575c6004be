"""Run configuration: one validated object from a TOML/YAML file and/or CLI flags.

pydantic gives precise error locations (``budget.wall_seconds``); :func:`load_config` turns them
into one readable :class:`~autorl.errors.ConfigError` that names the file and the field.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from autorl.errors import ConfigError

DEFAULT_TASK = "webshop"
DEFAULT_AGENT = "scripted"
DEFAULT_MODEL = "smollm2-135m"
DEFAULT_SANDBOX = "isolated"
AUTO_MEMORY_SHARE = 0.75
ENGINE_PRECISIONS = ("fp32", "bf16", "auto")
"""``engine_precision`` and ``$AUTORL_ENGINE_PRECISION`` (docs/engine.md)."""
GENERATION_BACKEND_ENV = "AUTORL_GENERATION_BACKEND"
ENGINE_PRECISION_ENV = "AUTORL_ENGINE_PRECISION"
ENGINE_PRECISION_REASON_ENV = "AUTORL_ENGINE_PRECISION_REASON"
"""How a run hands its ``engine`` and ``engine_precision`` to its evaluations (the runner sets
them, the model layer reads them at each evaluation; the reason: why ``auto`` resolved as it
did). Named once here, where the two settings are declared."""
PRECISION_NOT_APPLICABLE = "not applicable: the transformers path generates in fp32"
"""What the record says of a precision asked for on the transformers path."""


DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*$")


def duration_seconds(text: str) -> float:
    """``90``, ``90s``, ``15m``, ``1.5h`` -> seconds (the same in config files and flags)."""
    match = DURATION.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration: use seconds or a unit (600, 10m, 1.5h)")
    value, unit = float(match.group(1)), match.group(2) or "s"
    return value * {"s": 1, "m": 60, "h": 3600}[unit]


class Budget(BaseModel):
    """What the agent may spend: wall time, submissions, driver tokens and cost, GPU-hours."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("wall_seconds", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return duration_seconds(value) if isinstance(value, str) else value

    wall_seconds: float = Field(480.0, gt=0, description="Agent phase wall clock, seconds.")
    max_submissions: int = Field(8, ge=1, description="Submissions accepted, duplicates excluded.")
    max_tokens: int | None = Field(
        None, gt=0, description="Driver tokens (input + output) through the gateway; None: no cap."
    )
    max_cost_usd: float | None = Field(
        None, gt=0, description="Driver cost in US dollars through the gateway; None: no cap."
    )
    max_gpu_hours: float | None = Field(
        None,
        gt=0,
        description="GPU-hours of the agent's GPUs (limits.gpus), metered through NVML as "
        "utilisation x time; None: no cap.",
    )
    evaluation_time: Literal["charged", "excluded"] = Field(
        "charged",
        description="charged: the agent's clock runs while the grader evaluates its "
        "submissions; excluded: the deadline moves back by the time spent evaluating.",
    )


class LimitsConfig(BaseModel):
    """Resources of the agent's processes, enforced by the sandbox (cgroups, device nodes)."""

    model_config = ConfigDict(extra="forbid")

    memory_gb: float | Literal["auto", "none"] = Field(
        "auto", description="Memory of all the agent's processes; auto: 75 % of the machine's."
    )
    pids: int | Literal["none"] = Field(4096, description="Processes and threads at once.")
    cpus: float | None = Field(None, gt=0, description="CPU cores' worth of time; None: all.")
    workspace_gb: float | None = Field(
        100.0,
        gt=0,
        description="Disk the workspace and HOME may fill; the agent is stopped "
        "when it goes over (None: no cap).",
    )
    gpus: list[int] = Field(
        default_factory=list, description="GPU indices the agent may use (none by default)."
    )

    @field_validator("gpus")
    @classmethod
    def _indices(cls, value: list[int]) -> list[int]:
        return _gpu_list(value)

    @field_validator("memory_gb", "pids")
    @classmethod
    def _positive(cls, value: Any) -> Any:
        if isinstance(value, int | float) and value <= 0:
            raise ValueError('must be positive, or "none"')
        return value

    def resolve(self) -> Any:
        """The :class:`autorl.types.Limits` this config means on this machine."""
        import psutil

        from autorl.types import Limits

        if self.memory_gb == "auto":
            memory: int | None = int(psutil.virtual_memory().total * AUTO_MEMORY_SHARE)
        elif self.memory_gb == "none":
            memory = None
        else:
            memory = int(float(self.memory_gb) * 1024**3)
        return Limits(
            memory_bytes=memory,
            pids=None if self.pids == "none" else int(self.pids),
            cpus=self.cpus,
            gpus=tuple(str(g) for g in self.gpus),
        )


class GraderConfig(BaseModel):
    """Where and how the grader evaluates submissions."""

    model_config = ConfigDict(extra="forbid")

    tokenizer: Literal["base", "own"] = Field(
        "base",
        description="base: every submission is graded with the base model's tokenizer, chat "
        "template and generation config (a submission is weights); own: the checkpoint's "
        "tokenizer and chat template (for agents that add tokens), shown in the report.",
    )
    eval_timeout_factor: float = Field(
        4.0,
        gt=0,
        description="An evaluation fails with evaluation_timeout after this many times the "
        "baseline's measured evaluation time, plus eval_timeout_margin_s.",
    )
    eval_timeout_margin_s: float = Field(
        120.0, ge=0, description="Seconds added to every evaluation's deadline (model loading)."
    )

    gpus: list[int] = Field(
        default_factory=list,
        description="GPU indices for evaluation, disjoint from limits.gpus; none: the first "
        "GPU that is not the agent's (or the CPU).",
    )

    @field_validator("gpus")
    @classmethod
    def _indices(cls, value: list[int]) -> list[int]:
        return _gpu_list(value)


def _gpu_list(value: list[int]) -> list[int]:
    if any(g < 0 for g in value):
        raise ValueError("GPU indices are 0 or more")
    if len(set(value)) != len(value):
        raise ValueError("a GPU is named twice")
    return value


class EgressConfig(BaseModel):
    """What the agent may reach beyond the grading API and the gateway."""

    model_config = ConfigDict(extra="forbid")

    policy: str = Field(
        "none",
        min_length=1,
        description="none: nothing; else the installed egress component of that name "
        "(`autorl list egress`), checked when the run is resolved.",
    )
    allow: list[str] = Field(
        default_factory=list,
        description="host or host:port entries (e.g. pypi.org, files.pythonhosted.org:443).",
    )

    @field_validator("allow")
    @classmethod
    def _hosts(cls, value: list[str]) -> list[str]:
        for entry in value:
            host, _, port = entry.rpartition(":") if ":" in entry else (entry, "", "")
            if not host or any(c in host for c in "/@ ") or (port and not port.isdigit()):
                raise ValueError(f"{entry!r} is not host or host:port")
        return value


class ScoringConfig(BaseModel):
    """How a run's score is measured (docs/scoring.md): which split the agent's feedback comes
    from and which one the reported number is on."""

    model_config = ConfigDict(extra="forbid")

    protocol: Literal["sealed", "reference"] = Field(
        "sealed",
        description="sealed: every submission is scored on a dev split (the agent's feedback), "
        "and after the agent's phase the selected checkpoint on a sealed test split (the run's "
        "score); reference: the paper's protocol, every submission on the whole held-out split, "
        "the best reported.",
    )
    test_all: bool = Field(
        False,
        description="sealed only: also score every scored submission on test after the agent's "
        "phase (the best on test and the oracle gap), at the cost of more evaluations.",
    )
    test_share: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="The share of the held-out split sealed as test; None: the task's default "
        "(PreparedTask.test_share, 0.5 unless the task says otherwise).",
    )


class RunConfig(BaseModel):
    """Everything that defines a run; stored resolved in the manifest."""

    model_config = ConfigDict(extra="forbid")
    _files: dict[str, str] = PrivateAttr(default_factory=dict)
    """Top-level key -> the config file its value came from (not a flag): errors name it."""

    def origin(self, key: str) -> str:
        """`` (<key> from config file F)`` when the value came from a file, else ''."""
        return f" ({key} from config file {self._files[key]})" if key in self._files else ""

    task: str = DEFAULT_TASK
    agent: str = DEFAULT_AGENT
    model: str = DEFAULT_MODEL
    driver: str | None = None
    seed: int = 0
    budget: Budget = Field(default_factory=Budget)
    sandbox: str = DEFAULT_SANDBOX
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    grader: GraderConfig = Field(default_factory=GraderConfig)
    egress: EgressConfig = Field(default_factory=EgressConfig)
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    reports: list[str] = Field(default_factory=lambda: ["basic", "analysis"])
    runs_dir: Path = Path("runs")
    run_id: str | None = None
    device: str = "auto"
    engine: Literal["auto", "transformers", "vllm"] | None = Field(
        None,
        description="Evaluation inference engine: transformers; vllm (vLLM on a GPU, else the "
        "vLLM CPU engine, an error when not built: `autorl engine prepare`); auto (vLLM when it "
        "can run the model, else transformers). None: $AUTORL_GENERATION_BACKEND, else vLLM on a "
        "GPU when installed, else transformers.",
    )
    engine_precision: Literal["fp32", "bf16", "auto"] | None = Field(
        None,
        description="Precision of the vLLM CPU engine: fp32 (the default: greedy outputs equal "
        "the transformers path's), bf16, or auto (bf16 when this host's bf16 matmul is at "
        "least 2x its fp32, as `autorl engine prepare` measured it). Resolved once at the run's "
        "start and recorded in the manifest; the transformers path stays fp32 (recorded as not "
        "applicable). None: $AUTORL_ENGINE_PRECISION, else fp32.",
    )
    agent_engine: Literal["auto", "vllm", "none"] = Field(
        "auto",
        description="The inference engine in the agent's runtime, for its own rollouts: auto "
        "(the vLLM CPU environment when `autorl engine prepare` built it), vllm (an error when "
        "it is not built), none. The agent starts its own server from it, in its sandbox; the "
        "manifest's runtime block records what it had.",
    )
    keep_checkpoints: bool = False
    snapshot_seconds: float = Field(60.0, gt=0, description="Period of code-history snapshots.")
    task_options: dict[str, Any] = Field(default_factory=dict)
    agent_options: dict[str, Any] = Field(default_factory=dict)
    driver_options: dict[str, Any] = Field(
        default_factory=dict, description="Passed to the driver backend (prices, timeout_s...)."
    )
    evaluator_options: dict[str, Any] = Field(default_factory=dict)
    labels: dict[str, str] = Field(
        default_factory=dict,
        description="Free labels kept in the manifest (a campaign sets campaign and cell).",
    )

    @model_validator(mode="after")
    def _disjoint_gpus(self) -> RunConfig:
        shared = sorted(set(self.limits.gpus) & set(self.grader.gpus))
        if shared:
            raise ValueError(
                f"GPU {', '.join(map(str, shared))} is in both limits.gpus (the agent's) and "
                "grader.gpus: give each GPU to one of them"
            )
        if self.budget.max_gpu_hours is not None and not self.limits.gpus:
            raise ValueError("budget.max_gpu_hours needs GPUs for the agent (limits.gpus)")
        return self

    @field_validator("task", "agent", "model", "sandbox")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()

    @field_validator("run_id")
    @classmethod
    def _safe_run_id(cls, value: str | None) -> str | None:
        if value is not None and (not value or "/" in value or value.startswith(".")):
            raise ValueError("must be a plain directory name (no '/', not starting with '.')")
        return value


def read_config_file(path: Path) -> dict[str, Any]:
    """Read a TOML or YAML file into a dict; syntax errors name the file and the line."""
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}", hint="check the path given to --config")
    text = path.read_text(encoding="utf-8")
    suffix = path.suffix.lower()
    try:
        if suffix == ".toml":
            data = tomllib.loads(text)
        elif suffix in {".yaml", ".yml"}:
            import yaml

            data = yaml.safe_load(text) or {}
        else:
            raise ConfigError(
                f"config file {path}: unknown format {suffix!r}",
                hint="use a .toml, .yaml or .yml file",
            )
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path}: invalid TOML: {exc}") from exc
    except ConfigError:
        raise
    except Exception as exc:  # yaml.YAMLError carries the line and column in its text
        raise ConfigError(f"config file {path}: invalid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: the top level must be a table/mapping")
    section = data.get("run")  # a file may hold its run table under [run]
    return section if isinstance(section, dict) else data


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_config(path: Path | None = None, overrides: dict[str, Any] | None = None) -> RunConfig:
    """File values first, then flag overrides (only the flags the user gave)."""
    data = read_config_file(path) if path else {}
    for table in ("matrix", "axes"):
        if table in data:
            raise ConfigError(
                f"config file {path} has a [{table}] table: it describes a campaign of runs, "
                "not one run",
                hint=f"run it with `autorl campaign run {path}` (validated before anything "
                "runs, parallel, resumable, compared with statistics; docs/campaigns.md)",
            )
    config = validate_config(_merge(data, overrides or {}), path)
    config._files = {k: str(path) for k in data if k not in (overrides or {})}
    return config


def merge_config(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``override`` laid over ``base``, tables merged key by key (what flags do to a file)."""
    return _merge(base, override)


def validate_config(
    data: dict[str, Any], path: Path | None, *, where: str | None = None
) -> RunConfig:
    """A RunConfig, or a ConfigError listing every bad field under ``where`` (what to fix):
    unknown keys with the closest known one, a union's alternatives in one line, no pydantic
    internals."""
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        where = where or (f"config file {path}" if path else "run options")
        lines: dict[str, list[str]] = {}
        for err in exc.errors():
            fields, model = [], RunConfig
            for part in err["loc"]:  # the real path; the rest are a union's branch names
                known = getattr(model, "model_fields", None)
                if known is None or (part not in known and err["type"] != "extra_forbidden"):
                    break
                fields.append(str(part))
                model = _submodel(known[part].annotation) if part in known else None
            loc = ".".join(fields) or "(top level)"
            if err["type"] == "extra_forbidden":
                parent = RunConfig
                for part in fields[:-1]:
                    parent = _submodel(parent.model_fields[part].annotation) or parent
                names = sorted(parent.model_fields)
                close = difflib.get_close_matches(fields[-1], names, n=1)
                lines.setdefault(loc, []).append(
                    "unknown key"
                    + (f" (did you mean {close[0]!r}?)" if close else "")
                    + f"; known here: {', '.join(names)}"
                )
                continue
            got = f" (got {err['input']!r})" if "input" in err and err["type"] != "missing" else ""
            lines.setdefault(loc, []).append(err["msg"].removeprefix("Input should be ") + got)
        text = "\n".join(
            f"  {loc}: " + (msgs[0] if len(msgs) == 1 else _one_of(msgs))
            for loc, msgs in lines.items()
        )
        raise ConfigError(
            f"{where} is invalid:\n{text}",
            hint="see 'autorl run --help' and docs/running.md for the fields and their types",
        ) from None


def _submodel(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model a field holds (a section such as ``limits``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _one_of(messages: list[str]) -> str:
    """A union's failed alternatives as one requirement: ``a valid number, or 'auto' or
    'none' (got 'lots')`` (the value once, at the end)."""
    got = ""
    parts = []
    for message in messages:
        head, sep, tail = message.rpartition(" (got ")
        if sep:
            message, got = head, f" (got {tail}"
        parts.append(message.split(", unable to")[0])
    return "expected " + ", or ".join(dict.fromkeys(parts)) + got
