"""The ``ray`` executor: each job a Ray task that holds its slot's CPUs and GPUs.

Ray schedules the tasks on whatever nodes have the resources, gives each GPU task its own
devices (``CUDA_VISIBLE_DEVICES`` inside the task, the same ids in :class:`Placement`), and
re-runs a task whose worker process or node died (``max_retries``). An exception raised by the
job itself is its result (a ``Done`` with ``error``), never retried: a cell that fails would
fail again. Ray is imported only here, and only when jobs run.

Options (``[campaign] executor_options``):

- ``address``: join a running cluster (``"auto"``, ``"HOST:6379"``, ``"ray://HOST:10001"``);
  default: start a local Ray instance for these jobs and shut it down afterwards.
- ``num_cpus`` / ``num_gpus``: size of that local instance (default: what Ray detects).
- ``max_retries``: re-runs of a task whose worker or node died (default 2; -1: no limit).
- ``runtime_env``: Ray's runtime environment for the job (``env_vars``, ``working_dir``...).

A process already connected to Ray (``ray.init`` called before) is used as it is.

Ray's own log lines (its ``ray`` logger: start-up INFO, token and resource WARNINGs) are not
printed: they propagate to the root logger, where ``autorl campaign run`` writes them to the
campaign's ``logs/campaign.log`` (and to the console with ``--verbose``); workers' output is not
forwarded (each cell's run has its own log file). A local instance gets a token of its own in
the environment (``RAY_AUTH_TOKEN``) unless one is configured, so Ray's token authentication
stays on without Ray writing ``~/.ray/auth_token`` into the user's home.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autorl.errors import ConfigError
from autorl.executors import BaseExecutor, Done, Jobs, Placement, Slot, check_options, error_text

NAME = "ray"
OPTIONS = ("address", "num_cpus", "num_gpus", "max_retries", "runtime_env")
EXAMPLE = '[campaign] executor_options = { address = "auto", max_retries = 2 }'


@dataclass(frozen=True)
class RayOptions:
    """Validated options: where Ray runs and how often a task that lost its worker is re-run."""

    address: str | None = None
    num_cpus: int | None = None
    num_gpus: int | None = None
    max_retries: int = 2
    runtime_env: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, options: Mapping[str, Any] | None) -> RayOptions:
        check_options(NAME, options, OPTIONS)
        options = dict(options or {})
        address = options.get("address")
        if address is not None and (not isinstance(address, str) or not address.strip()):
            _bad("address", address, 'a Ray address such as "auto" or "ray://head:10001"')
        parsed = cls(
            address=address.strip() if address else None,
            num_cpus=_int_option(options, "num_cpus", minimum=1),
            num_gpus=_int_option(options, "num_gpus", minimum=0),
            max_retries=_int_option(options, "max_retries", minimum=-1, default=2),
            runtime_env=_mapping_option(options, "runtime_env"),
        )
        sized = [name for name in ("num_cpus", "num_gpus") if getattr(parsed, name) is not None]
        if parsed.address is not None and sized:
            raise ConfigError(
                f"executor 'ray': {' and '.join(sized)} size a local Ray instance, but address "
                f"{parsed.address!r} joins a running cluster, whose nodes declare their own",
                hint="drop them, or give each node its size: `ray start --num-cpus N --num-gpus G`",
            )
        return parsed


class RayExecutor(BaseExecutor):
    """Runs jobs as Ray tasks. Constructor options are defaults for :meth:`map` and
    :meth:`as_completed` (whose own ``options`` override them)."""

    name = NAME
    OPTIONS = OPTIONS

    def __init__(self, **options: Any) -> None:
        RayOptions.parse(options)
        self.options = options

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        """``fn(item)`` for each item as Ray tasks; results in item order; the first failed
        job's exception is raised (as the original exception type)."""
        opts = RayOptions.parse(self.options)
        if not items:
            return []
        with _connected(opts) as ray:
            remote = ray.remote(_call).options(max_retries=opts.max_retries)
            fn_ref = ray.put(fn)
            refs = [remote.remote(fn_ref, item) for item in items]
            try:
                return ray.get(refs)
            except ray.exceptions.RayTaskError as exc:
                cause = getattr(exc, "cause", None)
                if isinstance(cause, BaseException):
                    raise cause from None
                raise

    def run(self, jobs: Jobs) -> Iterator[Done]:
        """One Ray task per item, holding its slot; a :class:`Done` per task as it ends."""
        opts = RayOptions.parse({**self.options, **jobs.options})
        fn, items, slots = jobs.fn, jobs.items, jobs.slots
        if not items:
            return
        with _connected(opts) as ray:
            nodes = _node_sizes(ray)
            remote = ray.remote(_run_job)
            fn_ref = ray.put(fn)
            pending: dict[Any, int] = {}
            refused: list[Done] = []
            try:
                for index, (item, slot) in enumerate(zip(items, slots, strict=True)):
                    problem = _never_fits(slot, nodes)
                    if problem:
                        refused.append(Done(index, error=problem))
                        continue
                    task = remote.options(
                        num_cpus=slot.cpus,
                        num_gpus=slot.gpus,
                        max_retries=opts.max_retries,
                        retry_exceptions=False,
                        name=f"autorl-job-{index}",
                    )
                    pending[task.remote(fn_ref, item, slot.cpus)] = index
                yield from refused
                while pending:
                    ready, _ = ray.wait(list(pending), num_returns=1)
                    for ref in ready:
                        yield _done(ray, pending.pop(ref), ref, opts.max_retries)
            finally:
                for ref in pending:  # the caller stopped early (Ctrl-C, an error): stop the rest
                    with contextlib.suppress(Exception):
                        ray.cancel(ref, force=True)


# inside the Ray worker -------------------------------------------------------------------------


def _run_job(fn: Callable[[Any, Placement], Any], item: Any, cpus: float = 0.0) -> tuple[bool, Any]:
    """Runs in the task: the job's own exception becomes its result, so Ray never retries it
    (only a dead worker or node is retried)."""
    import ray

    placement = Placement(gpus=_gpu_ids(ray.get_gpu_ids()), worker=_worker_label(ray), cpus=cpus)
    try:
        return True, fn(item, placement)
    except Exception as exc:
        return False, error_text(exc)


def _call(fn: Callable[[Any], Any], item: Any) -> Any:
    return fn(item)


def _gpu_ids(ids: Sequence[int | str]) -> tuple[Any, ...]:
    """Ray's GPU ids as ints (strings such as GPU UUIDs from CUDA_VISIBLE_DEVICES stay as is)."""
    return tuple(int(i) if str(i).isdigit() else i for i in ids)


def _worker_label(ray: Any) -> str:
    try:
        return ray.util.get_node_ip_address()
    except Exception:  # a node without an address to report: its id is unique too
        return ray.get_runtime_context().get_node_id()


# on the driver ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _connected(opts: RayOptions) -> Iterator[Any]:
    """Ray, connected as the options say; a connection made here is closed afterwards (a local
    instance started here is shut down with it)."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(
            f"executor 'ray' needs Ray, which is not importable here ({exc})",
            hint="pip install autorl-executor-ray",
        ) from None
    if ray.is_initialized():
        given = [n for n in ("address", "num_cpus", "num_gpus", "runtime_env") if getattr(opts, n)]
        if given:
            raise ConfigError(
                f"executor 'ray': this process is already connected to Ray, so option(s) "
                f"{', '.join(given)} cannot apply",
                hint="drop them, or let the executor connect (do not call ray.init first)",
            )
        yield ray
        return
    saved = {k: os.environ.get(k) for k in AUTH_ENV}
    try:
        _init(ray, opts)
        yield ray
    finally:
        with _native_stderr_logged(logging.getLogger("ray")):
            ray.shutdown()
        for key, value in saved.items():  # ray.init sets RAY_AUTH_MODE in this process
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        _forget_token()


def _forget_token() -> None:
    """Ray caches the token it loaded: a later connection (another cluster) loads its own."""
    with contextlib.suppress(Exception):
        from ray._raylet import AuthenticationTokenLoader, Config

        AuthenticationTokenLoader.instance().reset_cache()
        Config.initialize("")  # the auth mode, read again from the restored environment


AUTH_ENV = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


def _own_token() -> None:
    """A token for a local instance, in the environment its processes inherit, unless the user
    configured one: Ray would otherwise generate one into ``~/.ray/auth_token``."""
    home_token = os.path.join(os.path.expanduser("~"), ".ray", "auth_token")
    if any(os.environ.get(k) for k in AUTH_ENV) or os.path.exists(home_token):
        return
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)


@contextlib.contextmanager
def _native_stderr_logged(ray_logger: logging.Logger) -> Iterator[None]:
    """What Ray's C++ core writes to this process's stderr while connecting (its glog lines,
    such as the probe for the node's address) becomes records of the ``ray`` logger instead."""
    import sys
    import tempfile

    with tempfile.TemporaryFile() as captured:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            for line in captured.read().decode("utf-8", "replace").splitlines():
                if line.strip():
                    ray_logger.warning("%s", line)


def _quiet(ray_logger: logging.Logger) -> None:
    """Ray's records go where the application's logging sends them (not its own stderr
    handler, which ``configure_logging=False`` removed)."""
    ray_logger.handlers.clear()
    ray_logger.propagate = True


def _init(ray: Any, opts: RayOptions) -> None:
    ray_logger = logging.getLogger("ray")
    _quiet(ray_logger)
    with _python_signal_handlers(), _native_stderr_logged(ray_logger):
        _connect(ray, opts)


@contextlib.contextmanager
def _python_signal_handlers() -> Iterator[None]:
    """Ray's core installs a failure handler for SIGTERM in this process (it prints a stack and
    exits 1), replacing the application's: a campaign stopped by SIGTERM would not record its
    cells. The application's Python handlers are put back once Ray is connected."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in handlers.items():
            if handler is not None:
                signal.signal(sig, handler)


def _connect(ray: Any, opts: RayOptions) -> None:
    runtime_env = opts.runtime_env or None
    quiet = {"configure_logging": False, "log_to_driver": False}
    if opts.address is None:
        _own_token()
        # "local": a new instance even if a `ray start` cluster is running on this machine
        ray.init(
            address="local",
            num_cpus=opts.num_cpus,
            num_gpus=opts.num_gpus,
            runtime_env=runtime_env,
            include_dashboard=False,
            **quiet,
        )
        return
    try:
        ray.init(address=opts.address, runtime_env=runtime_env, **quiet)
    except ImportError as exc:  # ray:// without the client extra
        raise ConfigError(
            f"executor 'ray': address {opts.address!r} needs Ray Client ({exc})",
            hint="pip install 'autorl-executor-ray[client]'",
        ) from None
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
        raise ConfigError(
            f"executor 'ray': cannot join the Ray cluster at {opts.address!r}: {_first_line(exc)}",
            hint="start one (`ray start --head` on the head node), check the address, or drop "
            "`address` to start a local Ray instance",
        ) from None


def _node_sizes(ray: Any) -> list[tuple[float, float]] | None:
    """(CPUs, GPUs) of each live node, or None when the cluster does not say (then every
    slot is sent and Ray decides)."""
    try:
        nodes = [n["Resources"] for n in ray.nodes() if n.get("Alive")]
    except Exception:
        return None
    return [(float(r.get("CPU", 0)), float(r.get("GPU", 0))) for r in nodes] or None


def _never_fits(slot: Slot, nodes: list[tuple[float, float]] | None) -> str | None:
    """Why no node can ever run a job of this slot (Ray would keep it pending forever)."""
    if nodes is None or any(slot.cpus <= c and slot.gpus <= g for c, g in nodes):
        return None
    sizes = ", ".join(f"{c:g} CPU/{g:g} GPU" for c, g in nodes)
    return (
        f"the job needs {slot.cpus:g} CPU(s) and {slot.gpus} GPU(s) on one node; no node of "
        f"the Ray cluster has that much (nodes: {sizes})"
    )


def _done(ray: Any, index: int, ref: Any, max_retries: int) -> Done:
    try:
        ok, value = ray.get(ref)
    except Exception as exc:  # the worker or node died more often than max_retries, cancelled...
        return Done(index, error=f"{_ray_error_text(exc)} (ray max_retries={max_retries})")
    return Done(index, value) if ok else Done(index, error=value)


def _ray_error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {_first_line(exc)}"


def _first_line(exc: BaseException) -> str:
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), repr(exc))


def _bad(name: str, value: Any, expected: str) -> None:
    raise ConfigError(
        f"executor 'ray': option {name} must be {expected}, got {value!r}", hint=EXAMPLE
    )


def _int_option(
    options: Mapping[str, Any], name: str, minimum: int, default: int | None = None
) -> Any:
    value = options.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        _bad(name, value, f"an integer >= {minimum}")
    return value


def _mapping_option(options: Mapping[str, Any], name: str) -> dict[str, Any]:
    value = options.get(name) or {}
    if not isinstance(value, Mapping):
        _bad(name, value, "a table, e.g. { env_vars = { HF_HOME = '/shared/hf' } }")
    return dict(value)
