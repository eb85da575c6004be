"""The engine process: vLLM's OpenAI-compatible server over one model directory, on a unix socket.

Why a server in a child process, not ``vllm.LLM`` in this one: vLLM runs from its own
environment (see :mod:`autorl_hf.engine.env`), so it cannot be imported here. Its HTTP API
listens on a unix socket in a private (0700) directory, never on a TCP port: a sandbox that
shares the harness's loopback cannot reach it, and nothing listens beyond the machine. Its
internal message queues are pinned to loopback (``VLLM_HOST_IP=127.0.0.1``), and it never goes
online (Hugging Face offline, usage statistics off).

Lifetime: the server runs under :mod:`autorl_hf.engine.lifeline`, in a process group of its own
whose stdin is a pipe from this process; :meth:`EngineServer.close` (or this process dying,
however it dies) closes the pipe and the lifeline ends the whole group.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from autorl.text import sanitize
from autorl_hf.engine.env import EngineEnv, EngineUnavailable, require_engine

PRECISIONS = {"fp32": "float32", "bf16": "bfloat16"}
MAX_STOP_STRINGS = 16
"""Stop strings one request may carry (``VLLM_MAX_STOP_STRINGS``; vLLM's default, 4, refused
HumanEval's six with a 400). More still work: the backend cuts the rest itself."""
BLOCK_SIZE = 32
"""Tokens per KV-cache block. The prefix cache reuses whole blocks only, and vLLM CPU's default
block is 128 tokens: a multi-turn episode's next prompt recomputed up to 127 tokens of the
turn before. WebShop's 40 sessions (SmolLM2, fp32, one run each, same actions): 262.4 s at 128,
220.6 s at 32; 16 did not start (the CPU backend wants multiples of 32). docs/engine.md."""
_LIFELINES: set[int] = set()
"""Write ends of the live engines' lifeline pipes: a forked child (multiprocessing's fork,
``os.fork``) closes them at once, so only this process keeps its engines alive."""


def _close_lifelines_in_child() -> None:
    for fd in list(_LIFELINES):
        with contextlib.suppress(OSError):
            os.close(fd)
    _LIFELINES.clear()


os.register_at_fork(after_in_child=_close_lifelines_in_child)
LIFELINE = Path(__file__).with_name("lifeline.py")
WORKER_DIR = Path(__file__).with_name("worker")
"""Holds ``autorl_engine_worker``, the only module of ours the engine's processes import."""
WORKER_EXTENSION = "autorl_engine_worker.WeightLoader"

STOP_GRACE_S = 5.0
LOAD_TIMEOUT_S = 300.0
"""A load took ~1.5 s for SmolLM2: one stuck this long is given up, and a fresh engine starts."""


def engine_environ(*, kv_cache_gib: int, reserved_cpus: int, workdir: Path) -> dict[str, str]:
    """The child's environment: the caller's, minus this venv, plus vLLM's CPU settings
    (``VLLM_CPU_*`` already set by the caller are kept: how a user sizes the KV cache).

    Its temporary files go to ``workdir``, which the engine's lifeline removes however the run
    ends: vLLM names its message queues' unix sockets ``$TMPDIR/<uuid>`` and never unlinks them
    (469 were left in /tmp here after a day of test runs).

    On a 2-core machine vLLM reserves one core for its front end and binds the model's OpenMP
    threads to the other (its default, kept explicit): binding both cores while other work ran
    made generation 3.6x slower here.
    """
    dropped = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "VLLM_SERVER_DEV_MODE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}  # dev mode: reloadable only
    env.update(
        VLLM_HOST_IP="127.0.0.1",
        VLLM_RPC_BASE_PATH=str(workdir),
        TMPDIR=str(workdir),
        VLLM_NO_USAGE_STATS="1",
        DO_NOT_TRACK="1",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        # whole GiB (vLLM reads an int); the caller's own settings win over the defaults
        VLLM_CPU_KVCACHE_SPACE=env.get("VLLM_CPU_KVCACHE_SPACE", str(kv_cache_gib)),
        VLLM_CPU_NUM_OF_RESERVED_CPU=env.get("VLLM_CPU_NUM_OF_RESERVED_CPU", str(reserved_cpus)),
        VLLM_CPU_OMP_THREADS_BIND=env.get("VLLM_CPU_OMP_THREADS_BIND", "auto"),
        VLLM_LOGGING_LEVEL=env.get("VLLM_LOGGING_LEVEL", "INFO"),
        VLLM_MAX_STOP_STRINGS=str(MAX_STOP_STRINGS),
    )
    return env


class EngineServer:
    """One vLLM CPU server process over ``model_dir``; a context manager (``close`` ends it)."""

    def __init__(
        self,
        model_dir: str | Path,
        *,
        precision: str = "fp32",
        kv_cache_gib: int = 1,
        max_model_len: int | None = None,
        reserved_cpus: int | None = None,
        startup_timeout_s: float = 300.0,
        engine: EngineEnv | None = None,
        served_name: str = "model",
        extra_args: Sequence[str] = (),
        reloadable: bool = False,
    ) -> None:
        """``served_name``: the model name requests give (the ``vllm`` driver sends its own);
        ``extra_args``: more of vLLM's server flags (the driver's tool-call parser);
        ``reloadable``: :meth:`load_weights` may replace the model's weights (vLLM's
        development endpoints, on the private socket only: the grader's engines, never the
        one a driver serves to an agent)."""
        if not isinstance(kv_cache_gib, int) or kv_cache_gib < 1:
            raise ValueError(
                f"kv_cache_gib must be a whole number of GiB >= 1, got {kv_cache_gib!r}"
            )
        if precision not in PRECISIONS:
            raise ValueError(f"precision {precision!r}: use one of {', '.join(PRECISIONS)}")
        self.model_dir = Path(model_dir)
        self.served_name = served_name
        self.precision = precision
        self.engine = engine or require_engine()
        self.workdir = Path(tempfile.mkdtemp(prefix="autorl-engine-"))  # 0700: ours alone
        self.socket = self.workdir / "api.sock"
        self.log_path = self.workdir / "engine.log"
        if reserved_cpus is None:
            reserved_cpus = 1 if (os.cpu_count() or 1) > 1 else 0
        command = [
            str(self.engine.python), str(LIFELINE), str(STOP_GRACE_S),
            "--remove", str(self.workdir),
            str(self.engine.python), "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(self.model_dir), "--served-model-name", served_name,
            "--uds", str(self.socket),
            "--enforce-eager",  # the compiled mode spent 85-110 s compiling, no faster here
            "--block-size", str(BLOCK_SIZE),
            "--dtype", PRECISIONS[precision],
            "--seed", "0",
            "--disable-uvicorn-access-log",
        ]  # fmt: skip
        if max_model_len is not None:
            command += ["--max-model-len", str(max_model_len)]
        environ = engine_environ(
            kv_cache_gib=kv_cache_gib, reserved_cpus=reserved_cpus, workdir=self.workdir
        )
        if reloadable:
            command += ["--worker-extension-cls", WORKER_EXTENSION]
            environ.update(VLLM_SERVER_DEV_MODE="1", PYTHONPATH=str(WORKER_DIR))
            # vLLM CPU splits a sequence's keys and values across threads when it has few,
            # which orders attention's sums by the thread count: a grader's engine changes its
            # threads with the machine's load, so its sums must not depend on them
            environ.setdefault("VLLM_CPU_ATTN_SPLIT_KV", "0")
        self.reloadable = reloadable
        self.threads: int | None = None
        """The worker's OpenMP threads once :meth:`set_threads` set them (unknown before)."""
        self.command = command + [str(a) for a in extra_args]
        started = time.monotonic()
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                env=environ,
                start_new_session=True,
            )
        assert self.process.stdin is not None
        _LIFELINES.add(self.process.stdin.fileno())
        self._finalizer = weakref.finalize(self, _stop, self.process, self.workdir)
        import httpx

        self.client = httpx.Client(
            transport=httpx.HTTPTransport(uds=str(self.socket)),
            base_url="http://engine",
            timeout=httpx.Timeout(3600.0, connect=5.0),  # a long batch on one busy core
        )
        try:
            self._wait_ready(startup_timeout_s)
        except BaseException:
            self.close()
            raise
        self.startup_s = time.monotonic() - started

    @property
    def pid(self) -> int:
        """The lifeline's pid, which is also the engine's process group."""
        return self.process.pid

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _wait_ready(self, timeout_s: float) -> None:
        import httpx

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise EngineUnavailable(
                    f"the vLLM CPU engine exited at start-up over {self.model_dir} "
                    f"(exit {self.process.returncode}); its log ends:\n{self.log_tail()}",
                    hint="see the log above; --engine transformers avoids the engine",
                )
            if self.socket.exists():
                with contextlib.suppress(httpx.HTTPError):
                    if self.client.get("/health", timeout=2.0).status_code == 200:
                        return
            time.sleep(0.25)
        raise EngineUnavailable(
            f"the vLLM CPU engine was not ready within {timeout_s:.0f} s over "
            f"{self.model_dir}; its log ends:\n{self.log_tail()}",
            hint="a loaded machine starts it slower: raise the start-up timeout, or use "
            "--engine transformers",
        )

    def load_weights(self, path: Path) -> float:
        """Replace the running model's weights with ``path``'s (the same frame: the caller
        checks, :func:`autorl_hf.engine.pool.frame_key`) and empty the prefix cache, whose keys
        and values the old weights computed; the seconds it took. Raises when the engine
        refuses (the caller then starts a fresh engine)."""
        started = time.monotonic()
        self._rpc("autorl_load_weights", f"load the weights of {path}", path=str(path))
        self.reset_prefix_cache()
        return time.monotonic() - started

    def set_threads(self, threads: int) -> int:
        """Compute on ``threads`` OpenMP threads from the next batch on; the count now. The
        worker stays on the cores vLLM bound it to at start-up: fewer threads leave room on
        them (for an agent training beside the grader), more take it back."""
        self.threads = int(self._rpc("autorl_set_threads", "set its threads", threads=threads))
        return self.threads

    def threads_now(self) -> int:
        """The worker's OpenMP threads (at start: one per core vLLM bound it to)."""
        return int(self._rpc("autorl_threads", "say its threads"))

    def _rpc(self, method: str, what: str, **kwargs: Any) -> Any:
        """Call our worker extension's ``method`` (a reloadable engine's only); its result."""
        if not self.reloadable:
            raise RuntimeError("this engine was started without reloadable=True")
        response = self.client.post(
            "/collective_rpc", json={"method": method, "kwargs": kwargs}, timeout=LOAD_TIMEOUT_S
        )
        # the engine's error can quote the submitted files (tensor names): inert and bounded
        # before it reaches the harness's log and terminal
        if response.status_code != 200:
            raise RuntimeError(
                f"the engine could not {what} ({response.status_code}): "
                f"{sanitize(response.text, 500)}"
            )
        return response.json()["results"][0]

    def group_pids(self) -> list[int]:
        """The engine's processes: the lifeline and everything under it (whose CPU is ours,
        not another process's, when the grader measures what else keeps the machine busy)."""
        import psutil

        try:
            leader = psutil.Process(self.pid)
            return [leader.pid, *(p.pid for p in leader.children(recursive=True))]
        except psutil.Error:
            return []

    def reset_prefix_cache(self) -> None:
        """Forget every cached prefix (after new weights; a bench's next round)."""
        reset = self.client.post("/reset_prefix_cache", timeout=LOAD_TIMEOUT_S)
        if reset.status_code != 200 or not reset.json().get("success"):
            raise RuntimeError(
                f"the engine did not empty its prefix cache: {sanitize(reset.text, 300)}"
            )

    def complete(self, prompt_ids: list[int], **params: Any) -> dict[str, Any]:
        """One completion request with token ids in; the first choice, token ids included."""
        body = {"model": self.served_name, "prompt": prompt_ids, "return_token_ids": True, **params}
        response = self.client.post("/v1/completions", json=body)
        if response.status_code != 200:
            raise RuntimeError(
                f"the vLLM CPU engine refused a completion ({response.status_code}): "
                f"{response.text[:500]}"
            )
        choice = response.json()["choices"][0]
        return dict(choice)

    def complete_many(
        self,
        prompts: Sequence[list[int]],
        params: Sequence[dict[str, Any]],
        progress: Callable[[int, int], None] | None = None,
    ) -> list[dict[str, Any]]:
        """Every prompt at once (the engine batches concurrent requests), in input order.

        ``progress(done, total)`` runs in this thread as each completion arrives, so a grader's
        deadline (raised from it) stops waiting at once; the requests still in flight end with
        the engine (:meth:`close`).
        """
        total = len(prompts)
        if not total:
            return []
        pool = ThreadPoolExecutor(max_workers=min(64, total), thread_name_prefix="engine")
        results: list[dict[str, Any] | None] = [None] * total
        try:
            futures = {
                pool.submit(self.complete, ids, **p): i
                for i, (ids, p) in enumerate(zip(prompts, params, strict=True))
            }
            for done, future in enumerate(as_completed(futures), start=1):
                results[futures[future]] = future.result()
                if progress is not None:
                    progress(done, total)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return [r for r in results if r is not None]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()
        self._finalizer()

    def __enter__(self) -> EngineServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _stop(process: subprocess.Popen[bytes], workdir: Path) -> None:
    """Close the lifeline (the engine's group ends itself), then make sure of it."""
    with contextlib.suppress(OSError):
        if process.stdin is not None:
            _LIFELINES.discard(process.stdin.fileno())
            process.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=STOP_GRACE_S + 5)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)
    shutil.rmtree(workdir, ignore_errors=True)
