"""The vllm backend against an OpenAI-compatible server (the fake provider stands in for vLLM,
which needs a GPU); serve=True fails with a clear message where vLLM cannot run."""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator

import pytest
from autorl_driver_vllm.driver import VLLMDriver
from autorl_llm.drivers import ChatRequest, open_driver
from autorl_llm.drivers.errors import DriverConfigError
from autorl_llm.testing import Answer, Fail, FakeProvider
from autorl_testing import DriverConformance, registry_with

MODEL = "Qwen/Qwen3-32B"
USER = [{"role": "user", "content": "What is two plus two?"}]


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


class TestVLLMConformance(DriverConformance):
    plugin_module = "autorl_driver_vllm.plugin"
    messages = USER

    @pytest.fixture(autouse=True)
    def _live(self, fake: FakeProvider) -> None:
        self.component_options = {"model": MODEL, "base_url": fake.openai_base_url}


def test_name_with_a_slash_reaches_the_server_and_costs_nothing(fake: FakeProvider) -> None:
    fake.enqueue(Fail(503), Answer("Four.", input_tokens=10**6, output_tokens=10**6))
    driver = open_driver(
        f"vllm/{MODEL}",
        registry=registry_with("autorl_driver_vllm.plugin"),
        env={"VLLM_BASE_URL": fake.openai_base_url},
        initial_delay_s=0.01,
    )
    reply = driver.complete(USER, max_tokens=8)
    assert (driver.model, reply.text, reply.attempts, reply.cost_usd) == (MODEL, "Four.", 2, 0.0)
    body = fake.requests[-1].body
    assert body["model"] == MODEL and body["max_tokens"] == 8  # vLLM's classic parameter
    assert fake.requests[-1].headers["authorization"] == "Bearer EMPTY"


def test_streaming(fake: FakeProvider) -> None:
    fake.enqueue(Answer("streamed from vllm"))
    chunks = list(
        VLLMDriver(MODEL, base_url=fake.openai_base_url).stream(ChatRequest.from_messages(USER))
    )
    assert "".join(c.text for c in chunks) == "streamed from vllm"


def test_no_server_says_how_to_give_one() -> None:
    with pytest.raises(DriverConfigError, match="no server: set the driver option base_url="):
        VLLMDriver(MODEL, env={})


@pytest.mark.skipif(
    importlib.util.find_spec("vllm") is not None and shutil.which("nvidia-smi") is not None,
    reason="vLLM and a GPU are present: serve=True would really start a server",
)
def test_serve_without_a_gpu_serves_on_the_cpu_engine_which_needs_a_local_model() -> None:
    """No GPU here: serve=True means autorl's vLLM CPU engine, which never downloads, so a hub
    id is refused at once, saying what it takes."""
    with pytest.raises(DriverConfigError, match="needs a model directory or an installed"):
        VLLMDriver(MODEL, env={}, serve=True)


def test_serve_cpu_without_the_engine_built_says_how_to_build_it(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUTORL_CACHE", str(tmp_path))
    with pytest.raises(DriverConfigError, match="not built") as info:
        VLLMDriver(str(tmp_path), env={}, serve="cpu")
    assert "autorl engine prepare" in (info.value.hint or "")
