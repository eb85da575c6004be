"""What only a CUDA GPU can check: real NVML readings, the grader on its own GPU, vLLM
evaluation. Marked ``cuda``; skipped (with the reason) wherever torch sees no CUDA device, run
whenever it does (docs/reference.md says what has run on a GPU and what has not)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]
AUTORL = str(Path(sys.executable).parent / "autorl")


def test_nvml_sees_the_gpus_and_meters_them() -> None:
    from autorl.engine.gpus import GpuMeter, NvmlProbe

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
    env = {**os.environ, "AUTORL_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    argv = [AUTORL, "run", "--task", "gsm8k", "--model", "tiny", "--device", "cuda"]
    done = subprocess.run(
        [*argv, "--budget", "20", "--runs-dir", str(tmp_path / "runs"), "--run-id", "cuda"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    manifest = json.loads((tmp_path / "runs" / "cuda" / "manifest.json").read_text())
    assert manifest["task"]["evaluator_config"]["device"] == "cuda"
    baseline = json.loads((tmp_path / "runs" / "cuda" / "baseline.json").read_text())
    backend = baseline["metrics"].get("backend")
    expected = "vllm" if importlib.util.find_spec("vllm") else "transformers"
    assert backend is None or backend.startswith(expected)
