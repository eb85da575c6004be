"""The cached baseline is keyed by what could change its score: an engine and its precision
(bf16 rounds differently from fp32) get baselines of their own, the default path keeps its key."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from autorl_runner.scoring import Scorer


def key(monkeypatch: pytest.MonkeyPatch, engine: str | None, precision: str | None) -> str:
    for name, value in (
        ("AUTORL_GENERATION_BACKEND", engine),
        ("AUTORL_ENGINE_PRECISION", precision),
    ):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    scorer = SimpleNamespace(
        setup=SimpleNamespace(
            evaluator_config={"max_new_tokens": 8, "device": "cpu"},
            contract_ref="autorl_task_gsm8k.protocol",
            base_hash="sha256:base",
            prepared=SimpleNamespace(evaluator="exact"),
        ),
        task=SimpleNamespace(name="gsm8k", version="1"),
    )
    return Scorer._baseline_key(scorer, "sha256:eval")  # type: ignore[arg-type]


def test_engine_and_precision_key_the_baseline(monkeypatch: pytest.MonkeyPatch) -> None:
    default = key(monkeypatch, None, None)
    assert key(monkeypatch, "transformers", None) == default
    assert key(monkeypatch, "transformers", "bf16") == default  # precision is the engine's
    fp32 = key(monkeypatch, "vllm-cpu", None)
    assert fp32 != default and key(monkeypatch, "vllm-cpu", "fp32") == fp32
    bf16 = key(monkeypatch, "vllm-cpu", "bf16")
    assert len({default, fp32, bf16}) == 3
