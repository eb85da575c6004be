"""engine.pool's policy, without starting an engine (the real reuse is in test_engine.py):
one idle engine at a time, taken as is by the same weights, with other weights loaded by the
same frame, stopped when another frame is asked for, when its idle time is up, or at once with
``$AUTORL_ENGINE_IDLE_S=0``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from autorl_hf.engine import pool


class Process:
    """Stands in for an engine process: the pool asks whether it runs, loads other weights
    into it and stops it."""

    def __init__(self, load_fails: bool = False) -> None:
        self.running = True
        self.loaded: list[Path] = []
        self.load_fails = load_fails

    def load(self, path: Path) -> None:
        if self.load_fails:
            raise RuntimeError("the engine refused")
        self.loaded.append(path)

    def alive(self) -> bool:
        return self.running

    def close(self) -> None:
        self.running = False


def key(weights: str, frame: str | None = None) -> pool.EngineKey:
    """Weights ``weights`` in frame ``frame`` (None: a frame no other model shares)."""
    return pool.EngineKey(frame and (frame,), (weights,), Path(weights))


@pytest.fixture(autouse=True)
def empty_pool() -> Iterator[None]:
    pool.close_idle()
    yield
    pool.close_idle()


def test_the_same_key_takes_the_idle_engine_another_stops_it() -> None:
    engine = Process()
    pool.give(key("a"), engine)
    assert engine.running and pool.take(key("a")) is engine
    assert pool.take(key("a")) is None  # taken: no longer idle
    pool.give(key("a"), engine)
    assert pool.take(key("b")) is None and not engine.running  # stopped before another starts


def test_a_second_engine_handed_back_stops_the_first() -> None:
    first, second = Process(), Process()
    pool.give(key("a"), first)
    pool.give(key("b"), second)
    assert not first.running and second.running
    assert pool.take(key("b")) is second


def test_idle_time_runs_out_and_zero_keeps_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(pool.IDLE_ENV, "0.2")
    engine = Process()
    pool.give(key("a"), engine)
    deadline = time.monotonic() + 5
    while engine.running and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not engine.running and pool.take(key("a")) is None
    monkeypatch.setenv(pool.IDLE_ENV, "0")
    engine = Process()
    pool.give(key("a"), engine)
    assert not engine.running


def test_a_dead_engine_is_never_handed_out() -> None:
    engine = Process()
    pool.give(key("a"), engine)
    engine.running = False  # it died while idle
    assert pool.take(key("a")) is None


def test_other_weights_of_the_same_frame_are_loaded_into_the_idle_engine() -> None:
    engine = Process()
    pool.give(key("base", frame="f"), engine)
    assert pool.take(key("v1", frame="f")) is engine and engine.loaded == [Path("v1")]
    pool.give(key("v1", frame="f"), engine)
    assert pool.take(key("v1", frame="f")) is engine and engine.loaded == [Path("v1")]  # as is
    pool.give(key("v1", frame="f"), engine)
    assert pool.take(key("v2", frame="g")) is None and not engine.running  # another frame


def test_a_failed_load_stops_the_engine_and_a_fresh_one_starts() -> None:
    engine = Process(load_fails=True)
    pool.give(key("base", frame="f"), engine)
    assert pool.take(key("v1", frame="f")) is None and not engine.running
    unknown = Process()  # a model without a frame (not safetensors) takes its own weights only
    pool.give(key("base", frame="f"), unknown)
    assert pool.take(key("v1")) is None and not unknown.running and not unknown.loaded


def _model(
    path: Path, tensors: dict[str, list[int]], config: str = '{"a": 1}', dtype: str = "F32"
) -> Path:
    """A model directory whose safetensors header lists ``tensors`` (no data: only headers
    are read)."""
    import json
    import struct

    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(config)
    header = json.dumps(
        {n: {"dtype": dtype, "shape": s, "data_offsets": [0, 0]} for n, s in tensors.items()}
    )
    (path / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header.encode())
    return path


def test_the_keys_of_weights_and_frame(tmp_path: Path) -> None:
    base = _model(tmp_path / "base", {"w": [2, 3], "e": [5, 3]})
    before = pool.model_key(base, "fp32", tmp_path)
    assert pool.model_key(base, "fp32", tmp_path) == before
    assert pool.model_key(base, "bf16", tmp_path).frame != before.frame
    # a checkpoint: the base's frame around other weights (another file, other bytes)
    ckpt = _model(tmp_path / "ckpt", {"e": [5, 3], "w": [2, 3]})
    (ckpt / "model.safetensors").write_bytes((ckpt / "model.safetensors").read_bytes() + b"x")
    other = pool.model_key(ckpt, "fp32", tmp_path)
    assert other.frame == before.frame and other.weights != before.weights
    (base / "model.safetensors").write_bytes((base / "model.safetensors").read_bytes() + b"y")
    assert pool.model_key(base, "fp32", tmp_path).weights != before.weights  # rewritten
    assert pool.model_key(base, "fp32", tmp_path).frame == before.frame
    # another frame: a tensor's shape, a tensor more, the config, a dtype, a tokenizer file
    for name, tensors, config, dtype in [
        ("shape", {"w": [2, 4], "e": [5, 3]}, '{"a": 1}', "F32"),
        ("more", {"w": [2, 3], "e": [5, 3], "x": [1]}, '{"a": 1}', "F32"),
        ("config", {"w": [2, 3], "e": [5, 3]}, '{"a": 2}', "F32"),
        ("dtype", {"w": [2, 3], "e": [5, 3]}, '{"a": 1}', "F16"),
    ]:
        model = _model(tmp_path / name, tensors, config, dtype)
        assert pool.model_key(model, "fp32", tmp_path).frame != before.frame, name
    (ckpt / "tokenizer.json").write_text("{}")
    assert pool.model_key(ckpt, "fp32", tmp_path).frame != before.frame
    # no safetensors (or an unreadable header): no frame, so no weights are ever loaded
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "pytorch_model.bin").write_bytes(b"z")
    assert pool.model_key(tmp_path / "bin", "fp32", tmp_path).frame is None
    (ckpt / "model.safetensors").write_bytes(b"\xff" * 8)  # a header "longer" than the file
    assert pool.model_key(ckpt, "fp32", tmp_path).frame is None
    (ckpt / "model.safetensors").write_bytes(b"\x01")  # shorter than a header's length
    assert pool.model_key(ckpt, "fp32", tmp_path).frame is None


def test_an_engines_refusal_reaches_the_log_inert_and_bounded(tmp_path: Path) -> None:
    """The engine's answer to a load can quote the submitted files (tensor names an agent
    chose): escape sequences and controls never reach the harness's terminal, and it is cut."""
    import httpx
    from autorl_hf.engine.server import EngineServer

    hostile = "\x1b[2J\x1b]0;owned\x07bad tensor " + "x" * 5000
    server = object.__new__(EngineServer)
    server.reloadable = True
    server.client = httpx.Client(
        base_url="http://engine",
        transport=httpx.MockTransport(lambda request: httpx.Response(400, text=hostile)),
    )
    with pytest.raises(RuntimeError) as refused:
        server.load_weights(tmp_path)
    message = str(refused.value)
    assert "bad tensor" in message and "\x1b" not in message and "\x07" not in message
    assert len(message) < 800
