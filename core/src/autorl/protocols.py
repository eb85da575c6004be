"""What each kind of component must look like. The registry checks every created instance.

``runtime_checkable`` protocols check attribute and method names, not signatures; the
conformance tests in :mod:`autorl_testing` exercise the behaviour.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from autorl.kinds import KINDS

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence

    from autorl.types import (
        AgentContext,
        AgentLaunch,
        EvalRequest,
        EvalResult,
        ModelInfo,
        PreparedTask,
        SandboxRequest,
        TaskContext,
    )


@runtime_checkable
class Task(Protocol):
    name: str
    version: str

    def prepare(self, ctx: TaskContext) -> PreparedTask:
        """Build (or reuse from ``ctx.cache_dir``) the train split, eval split and description."""
        ...


class DownloadableTask(Task, Protocol):
    """Optional: a task that can fetch its reference data (``autorl reference download``)."""

    def download(self, dest: Path) -> Path: ...


@runtime_checkable
class Evaluator(Protocol):
    name: str

    def evaluate(self, request: EvalRequest) -> EvalResult:
        """Score one checkpoint on the held-out split (``request.contract``: the task's
        implementation of the contract the evaluator's spec names)."""
        ...


class CheckedEvaluator(Evaluator, Protocol):
    """Optional: an evaluator that can refuse a bad config before any work (the engine calls
    it before the baseline; ``TaskConformance`` calls it on the config a task prepares)."""

    def check_config(self, config: dict[str, Any], contract: Any = None) -> None: ...


@runtime_checkable
class Agent(Protocol):
    """May also have ``check(task, options)``: raise ConfigError when it cannot run ``task``
    with ``options``; the run calls it before anything exists (else it checks ``Options``)."""

    name: str

    def launch(self, ctx: AgentContext) -> AgentLaunch:
        """Prepare the workspace (``code/``, HOME config) and say how to start the agent."""
        ...


@runtime_checkable
class Model(Protocol):
    name: str

    def materialize(self, cache_dir: Path) -> ModelInfo:
        """Return a Hugging Face directory for the base model, converting it once if needed."""
        ...


@runtime_checkable
class AgentProcess(Protocol):
    pid: int

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int | None: ...

    def terminate(self, grace: float = 5.0) -> int | None:
        """SIGTERM every process of the agent, then SIGKILL what is left after ``grace``."""
        ...

    @property
    def stats(self) -> Mapping[str, Any] | None:
        """What the sandbox measured of the agent once it stopped (peak memory, CPU
        seconds...), recorded in ``run.json``; None when it measures nothing."""
        ...


class Server(Protocol):
    """A harness service serving on 127.0.0.1 (and a unix socket for the sandbox)."""

    url: str
    port: int

    def stop(self) -> None: ...


class ServedGateway(Server, Protocol):
    """:meth:`Gateway.serve`'s running gateway: ``budget.spend()`` is the driver's use so far
    (tokens, cost, ``exhausted``), ``health.snapshot()`` its upstream's (``down``, ``failed``,
    ``consecutive_failures``, ``last_error``)."""

    budget: Any
    health: Any


class EgressProxy(Server, Protocol):
    """:meth:`Egress.start`'s running proxy."""

    requests: int
    denied: int

    def env(self) -> dict[str, str]: ...


class CodeSnapshots(Protocol):
    """:meth:`Grader.code_history`: ``snapshot(message)`` records the agent's code as it is
    now and returns the revision (None when nothing could be recorded)."""

    def snapshot(self, message: str) -> str | None: ...


class GradingService(Protocol):
    """:meth:`Grader.service`'s submission queue, as the engine drives it."""

    used: int

    def pending(self) -> int: ...

    def drain(self, timeout: float | None = None) -> bool: ...

    def close_intake(self, reason: str) -> None: ...

    def finalize(self, reason: str) -> None: ...

    def restore(self, entries: list[dict[str, Any]]) -> list[int]: ...

    def selection(self) -> dict[str, Any]: ...

    def release(self) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class Sandbox(Protocol):
    name: str
    isolated: bool
    """True when the agent cannot reach anything but what the request shows it (see
    docs/security.md); False marks runs whose scores are not comparable."""

    def check(self) -> None:
        """Raise ConfigError (naming the install command) when this machine cannot run it."""
        ...

    def describe(self) -> dict[str, Any]:
        """What the run's manifest records about the sandbox (mode, uid separation...)."""
        ...

    def start(self, request: SandboxRequest) -> AgentProcess:
        """Start ``request.launch`` behind the boundary; return a handle on it."""
        ...


@runtime_checkable
class Report(Protocol):
    name: str

    def render(self, run_dir: Path, out_dir: Path) -> list[Path]:
        """Write report files from the harness's own records in ``run_dir``."""
        ...


@runtime_checkable
class Driver(Protocol):
    """An LLM backend: ``name`` is the backend (``openai``), ``model`` the part after it.

    Requests and responses are ``autorl_llm.drivers.ChatRequest`` / ``ChatResponse`` (the
    ``autorl-llm`` distribution); subclass ``autorl_llm.drivers.BaseDriver`` for retries, timing
    and cost. ``stream`` yields ``ChatChunk`` pieces, the last one carrying the full response.
    """

    name: str
    model: str

    def chat(self, request: Any) -> Any:
        """Answer one request: text and/or tool calls, usage, cost, latency."""
        ...

    def complete(self, messages: Sequence[dict[str, Any]], **params: Any) -> Any:
        """``chat(ChatRequest.from_messages(messages, **params))``."""
        ...

    def stream(self, request: Any) -> Iterator[Any]:
        """The answer in pieces as they arrive; the last piece holds the full response."""
        ...


@runtime_checkable
class Gateway(Protocol):
    """The layer between agents and driver LLMs (``autorl-llm`` ships the ``llm`` one): opens
    a run's driver by name and serves it on 127.0.0.1 in the providers' wire formats, metering
    tokens and cost against the run's budget."""

    name: str

    def open_driver(self, name: str, options: Mapping[str, Any], registry: Any) -> Any:
        """The driver ``<backend>/<model>`` with its options; ConfigError when it cannot."""
        ...

    def serve(self, driver: Any, **settings: Any) -> Any:
        """Start serving ``driver`` (``token``, ``log_path``, ``max_tokens``,
        ``max_cost_usd``, ``on_exhausted``, ``unix_socket``); the running server has ``url``,
        ``port``, ``budget.spend()`` and ``stop()``."""
        ...


@runtime_checkable
class Grader(Protocol):
    """The grading side of the trust boundary (``autorl-grading`` ships the ``api`` one): takes
    the agent's checkpoints in (confined, copied, validated, fingerprinted), queues them for the
    run's evaluation and serves the grading API on 127.0.0.1 with the run's bearer token."""

    name: str

    def fingerprint(self, model_dir: Path) -> tuple[str, str]:
        """``(weights, files)``: the tensors' hash (a re-saved copy hashes alike) and the hash
        of every file (a changed tokenizer or config differs)."""
        ...

    def files_hash(self, directory: Path) -> str:
        """The hash of every file under ``directory`` (the second half of ``fingerprint``)."""
        ...

    def code_history(self, git_dir: Path, work_tree: Path) -> CodeSnapshots:
        """The run's code history: snapshots of ``work_tree`` (the agent's ``code/``) in a
        repository at ``git_dir``, outside the workspace (each submission's, periodic ones)."""
        ...

    def service(self, *, base_model: Path, **settings: Any) -> Any:
        """The submission queue for one run (``workspace``, ``storage``, ``log``, ``clock``,
        ``max_submissions``, ``baseline_score``, ``base_weight_hash``, ``evaluate``,
        ``notify``, ``run_id``, ``keep_checkpoints``, ``snapshot``); checkpoints are capped
        relative to ``base_model``'s size. It has ``submit``, ``restore``, ``drain``,
        ``close_intake``, ``finalize``, ``best_score``, ``pending`` and ``close``."""
        ...

    def serve(self, service: Any, *, token: str, unix_socket: Path, on_refused: Any) -> Any:
        """Start the grading API over ``service``; the running server has ``url``, ``port``
        and ``stop()``."""
        ...

    def instructions(self, *, url: str, max_submissions: int, protocol: str) -> dict[str, str]:
        """What the agent's ``instructions.md`` says of this grader under the scoring
        ``protocol``: ``budget`` (lines of the budget section), ``api`` and ``score`` (sections)."""
        ...


@runtime_checkable
class AgentRuntime(Protocol):
    """Builds the Python environment the agent's programs run with (``autorl-sandbox-common``
    ships ``harness``): the training stack and what the task's kit asks for, never a package
    of the harness, so an agent cannot import, read or patch the code that scores it."""

    name: str

    def build(self, extra: Iterable[str] = ()) -> Any:
        """The environment (built once, then cached) with ``extra`` distributions added; it
        has ``root``, ``python``, ``bin_dir``, ``read_only`` (paths sandboxes show read-only)
        and ``distributions``. ConfigError when a distribution is not available."""
        ...


@runtime_checkable
class Egress(Protocol):
    """The agent's way out under the egress policy named like it (``autorl-sandbox-common``
    ships ``allowlist``): a proxy in the harness on a unix socket sandboxes forward inside."""

    name: str

    def start(self, allow: Sequence[str], log_path: Path, unix_socket: Path) -> Any:
        """Start it; the running proxy has ``url``, ``port``, ``env()`` (the proxy variables
        for the agent), ``requests``, ``denied`` and ``stop()``. Each request is a line of
        ``log_path``."""
        ...


@runtime_checkable
class Executor(Protocol):
    """Runs jobs (a campaign's cells): see :mod:`autorl.executors`."""

    name: str

    def map(self, fn: Any, items: Sequence[Any]) -> list[Any]:
        """``fn(item)`` for each item; results in the order of ``items``."""
        ...

    def as_completed(
        self,
        fn: Any,
        items: Sequence[Any],
        slots: Sequence[Any] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> Iterator[Any]:
        """``fn(item, placement)`` for each item, each holding ``slots[i]`` (an
        :class:`autorl.executors.Slot`); yields an :class:`autorl.executors.Done` per job as
        it finishes, whatever the order; a failed job is a ``Done`` with ``error``.
        ``options`` are the executor's own (``workers``, ``address``...); an unknown one is a
        ConfigError."""
        ...


@runtime_checkable
class SearchBackend(Protocol):
    """A search engine for tasks whose agents search (DeepSearchQA): BM25, a web API...

    A hit is a plain JSON-serialisable dict ``{"title", "snippet", "url"}`` so a task can record
    results and replay them offline.
    """

    name: str

    def search(self, query: str, k: int) -> list[dict[str, str]]:
        """At most ``k`` hits for ``query``, best first."""
        ...


PROTOCOLS: dict[str, type] = {
    name: globals()[kind.protocol] for name, kind in KINDS.items() if kind.protocol
}
"""Kind -> protocol checked on creation, from :mod:`autorl.kinds`."""
