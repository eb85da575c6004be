"""What only a CUDA GPU can check: real NVML readings, the grader on its own GPU, vLLM
evaluation. Marked ``cuda``; skipped (with the reason) wherever torch sees no CUDA device, run
whenever it does (docs/reference.md says what has run on a GPU and what has not)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from autorl_testing.runs import autorl_run

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]
NO_CGROUP_LIMITS = '[limits]\nmemory_gb = "none"\npids = "none"\n'
"""GPU hosts often give root no delegated cgroup (the machine these ran on refused one); the
cgroup limits have tests of their own (the sandbox tests), these check the GPU paths."""


def test_nvml_sees_the_gpus_and_meters_them() -> None:
    from autorl_runner.gpus import GpuMeter, NvmlProbe

    probe = NvmlProbe()
    minors = probe.minors()
    assert len(minors) >= torch.cuda.device_count() >= 1
    meter = GpuMeter(probe, minors[:1])
    x = torch.randn(4096, 4096, device="cuda")
    for _ in range(50):
        x = x @ x / 64
    torch.cuda.synchronize()
    meter.sample(10.0)
    assert 0.0 <= meter.hours() <= 10.0 / 3600


def test_gsm8k_evaluates_on_the_gpu(tmp_path: Path) -> None:
    """A tiny run with the grader on CUDA (vLLM when installed): the manifest names the device
    and the baseline is scored."""
    cfg = tmp_path / "cuda.toml"
    cfg.write_text(NO_CGROUP_LIMITS)
    autorl_run(
        tmp_path, "cuda", config=cfg, task="gsm8k", model="tiny", device="cuda", budget=20,
        timeout=900,
    )  # fmt: skip
    manifest = json.loads((tmp_path / "runs" / "cuda" / "manifest.json").read_text())
    assert manifest["task"]["evaluator_config"]["device"] == "cuda"
    baseline = json.loads((tmp_path / "runs" / "cuda" / "baseline.json").read_text())
    backend = baseline["metrics"].get("backend")
    expected = "vllm" if importlib.util.find_spec("vllm") else "transformers"
    assert backend is None or backend.startswith(expected)


def test_deepspeed_recipe_on_the_agents_gpu(tmp_path: Path) -> None:
    """The agent holds GPU 0 (its device node inside the isolated sandbox), the grader stays on
    the CPU: the scripted agent's SFT and then its GRPO run under DeepSpeed ZeRO-3 on that GPU
    (NCCL, bf16), NVML meters the GPU-hours they spend, and both merged models are scored."""
    pytest.importorskip("deepspeed", reason="needs deepspeed (autorl-agent-scripted[deepspeed])")
    cfg = tmp_path / "gpu.toml"
    cfg.write_text(f'device = "cpu"\n{NO_CGROUP_LIMITS}gpus = [0]\n[budget]\nwall_seconds = 240\n')
    options = ["deepspeed=zero3", "rounds=1"]
    autorl_run(
        tmp_path, "dsgpu", config=cfg, task="gsm8k", model="tiny", agent_option=options,
        timeout=900,
    )  # fmt: skip
    run_dir = tmp_path / "runs" / "dsgpu"
    log = (run_dir / "agent.log").read_text()
    assert "sft (deepspeed zero3, 1 rank(s)) on cuda" in log, log[-3000:]
    assert "grpo (deepspeed zero3, 1 rank(s)) on cuda" in log, log[-3000:]
    assert (run_dir / "submissions.jsonl").read_text().count('"status": "scored"') >= 2
    usage = json.loads((run_dir / "run.json").read_text())["gpu_usage"]
    assert usage["gpus"] == [0] and usage["gpu_hours"] > 0
