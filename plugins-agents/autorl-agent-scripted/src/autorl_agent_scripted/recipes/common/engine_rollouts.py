"""GRPO rollouts on a vLLM server the recipe starts itself, as TRL's vLLM mode does.

Copied into ``workspace/code/`` with the other common files; no autorl import. The runtime
names an interpreter with vLLM in ``$AUTORL_VLLM_PYTHON`` when the harness built one
(``--agent-engine``, docs/engine.md). The recipe saves the policy it starts a GRPO phase from
(the SFT-merged weights) in its scratch directory, starts vLLM's OpenAI-compatible server over
it on a unix socket in a short private directory, and before each step's rollouts hands the
server the step's LoRA adapter (saved by PEFT, loaded with ``/v1/load_lora_adapter``: 0.2 s
with the save, where reloading the whole model means restarting the server). Each turn of
the lockstep episodes is one batch of concurrent completion requests, token ids in and out, so
the loss step trains on exactly the tokens the engine sampled. Greedy outputs with an adapter
equal PEFT's own generation in fp32.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ENGINE_ENV = "AUTORL_VLLM_PYTHON"
LORA_RANKS = (8, 16, 32, 64, 128, 256)
"""The adapter ranks vLLM accepts for ``--max-lora-rank`` (from 8 up)."""
SERVED = "policy"
STARTUP_TIMEOUT_S = 600.0
"""How long a start may take: 35-110 s on two cores, more beside other work."""
ERROR_RE = re.compile(r"^(\(\w+ pid=\d+\) ERROR .*\] )?[\w.]*(Error|Exception): ")
"""A traceback's last line (``PermissionError: ...``), bare or in vLLM's logged form."""


def _parent_death_signal() -> Callable[[], None] | None:
    """What the server's process runs before vLLM: SIGTERM when the recipe's thread that
    started it dies, however it dies (the server then stops its workers), so a killed recipe
    leaves no engine behind outside a sandbox either (inside, the sandbox ends every process).
    Resolved here, not in the child: a forked child of a threaded process must not import."""
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def engine_python() -> str | None:
    """The runtime's vLLM interpreter, or None when the harness gave none."""
    python = os.environ.get(ENGINE_ENV, "").strip()
    return python if python and Path(python).exists() else None


def _rank_cap(r: int) -> int:
    return next((cap for cap in LORA_RANKS if cap >= r), r)


class PolicyEngine:
    """A vLLM server over ``model_dir`` (a Hugging Face directory) serving LoRA adapters; a
    context manager (``close`` ends it and its worker processes)."""

    def __init__(
        self,
        model_dir: Path,
        *,
        python: str,
        scratch: Path,
        lora_rank: int,
        seed: int = 0,
    ) -> None:
        import httpx

        scratch.mkdir(parents=True, exist_ok=True)
        self.workdir = Path(tempfile.mkdtemp(prefix="vllm-", dir=scratch))
        # its sockets (the API's, and the message queues' vLLM names $TMPDIR/<uuid>) need a
        # short path: a unix socket's holds 107 bytes, and a workspace's can be longer
        self.sockets = Path(tempfile.mkdtemp(prefix="vllm-"))
        self.socket = self.sockets / "api.sock"
        self.log_path = self.workdir / "engine.log"
        self.adapters = 0
        self.model = SERVED
        cores = os.cpu_count() or 1
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        env.update(
            VLLM_HOST_IP="127.0.0.1",  # its message queues stay on loopback
            VLLM_RPC_BASE_PATH=str(self.sockets),
            TMPDIR=str(self.sockets),
            VLLM_NO_USAGE_STATS="1",
            DO_NOT_TRACK="1",
            HF_HUB_OFFLINE="1",
            VLLM_ALLOW_RUNTIME_LORA_UPDATING="True",
            VLLM_CPU_KVCACHE_SPACE=env.get("VLLM_CPU_KVCACHE_SPACE", "1"),
            # one core for its front end, the model's threads bound to the rest
            VLLM_CPU_NUM_OF_RESERVED_CPU=env.get(
                "VLLM_CPU_NUM_OF_RESERVED_CPU", "1" if cores > 1 else "0"
            ),
            VLLM_CPU_OMP_THREADS_BIND=env.get("VLLM_CPU_OMP_THREADS_BIND", "auto"),
        )
        command = [
            python, "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(model_dir), "--served-model-name", SERVED,
            "--uds", str(self.socket),
            "--enforce-eager", "--dtype", "float32", "--seed", str(seed),
            # the prefix cache reuses whole blocks: 32 tokens, not vLLM CPU's 128, keeps more of
            # an episode's last prompt (the grader's engine: 1.19x on WebShop's 40 sessions)
            "--block-size", "32",
            "--enable-lora", "--max-loras", "1", "--max-lora-rank", str(_rank_cap(lora_rank)),
            "--disable-uvicorn-access-log",
        ]  # fmt: skip
        started = time.monotonic()
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                env=env,
                start_new_session=True,  # its workers end with it (close: the whole group)
                preexec_fn=_parent_death_signal(),
            )
        self.client = httpx.Client(
            transport=httpx.HTTPTransport(uds=str(self.socket)),
            base_url="http://engine",
            timeout=httpx.Timeout(1800.0, connect=5.0),
        )
        try:
            self._wait_ready(STARTUP_TIMEOUT_S)
        except BaseException:
            self.close()
            raise
        self.startup_s = time.monotonic() - started

    def _why(self) -> str:
        """The log's first error line (vLLM's root cause: what follows is its consequences)
        and its last line, with where the whole log is."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            lines = []
        errors = [line.strip() for line in lines if ERROR_RE.search(line)]
        shown = dict.fromkeys([*errors[:1], *(lines[-1:] if lines else [])])
        return " / ".join(shown) + f" (log: {self.log_path})"

    def _wait_ready(self, timeout_s: float) -> None:
        import httpx

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"vLLM exited at start-up (exit {self.process.returncode}): {self._why()}"
                )
            if self.socket.exists():
                with contextlib.suppress(httpx.HTTPError):
                    if self.client.get("/health", timeout=2.0).status_code == 200:
                        return
            time.sleep(0.5)
        raise RuntimeError(f"vLLM was not ready within {timeout_s:.0f} s: {self._why()}")

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        response = self.client.post(path, json=body)
        if response.status_code != 200:
            status, text = response.status_code, response.text[:300]
            raise RuntimeError(f"vLLM {path} answered {status}: {text}")
        return response

    def use(self, policy: Any) -> float:
        """Serve ``policy``'s current LoRA adapter (a PEFT model) from now on; the seconds
        it took (save + load). The previous adapter is unloaded."""
        started = time.monotonic()
        self.adapters += 1
        name = f"{SERVED}-{self.adapters}"
        path = self.workdir / "adapters" / name
        policy.save_pretrained(str(path))
        self._post("/v1/load_lora_adapter", {"lora_name": name, "lora_path": str(path)})
        previous, self.model = self.model, name
        if previous != SERVED:
            self._post("/v1/unload_lora_adapter", {"lora_name": previous})
            shutil.rmtree(self.workdir / "adapters" / previous, ignore_errors=True)
        return time.monotonic() - started

    def sample(
        self,
        prompts: list[list[int]],
        *,
        temperature: float,
        max_new_tokens: int,
        stop_tokens: Iterable[int] = (),
        seed: int = 0,
    ) -> list[list[int]]:
        """One reply's token ids per prompt (greedy at ``temperature`` 0), all requests at once
        (the server batches them); a reply ends with the end-of-sequence token or one of
        ``stop_tokens``, kept in the reply as :func:`rollouts.sample` keeps them."""
        stops = sorted(set(stop_tokens))

        def one(index: int) -> list[int]:
            body = {
                "model": self.model,
                "prompt": prompts[index],
                "max_tokens": max_new_tokens,
                "temperature": temperature,
                "seed": seed + index,
                "return_token_ids": True,
                **({"stop_token_ids": stops} if stops else {}),
            }
            choice = self._post("/v1/completions", body).json()["choices"][0]
            return list(choice["token_ids"])

        with ThreadPoolExecutor(max_workers=min(64, max(1, len(prompts)))) as pool:
            return list(pool.map(one, range(len(prompts))))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGTERM)  # the server stops its workers
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=15)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)  # and whatever of its group is left
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        shutil.rmtree(self.sockets, ignore_errors=True)

    def __enter__(self) -> PolicyEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_for(model: Any, tokenizer: Any, *, scratch: Path, lora_rank: int, seed: int) -> Any:
    """Save ``model`` (merged weights) with its tokenizer under ``scratch`` and start a
    :class:`PolicyEngine` over it; the engine, or None (with the reason printed) when the
    runtime has no vLLM."""
    python = engine_python()
    if python is None:
        print(f"rollouts: ${ENGINE_ENV} is not set: the runtime has no vLLM", flush=True)
        return None
    policy_dir = scratch / "engine-policy"
    model.save_pretrained(str(policy_dir), safe_serialization=True)
    tokenizer.save_pretrained(str(policy_dir))
    return PolicyEngine(policy_dir, python=python, scratch=scratch, lora_rank=lora_rank, seed=seed)
