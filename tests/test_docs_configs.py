"""Every TOML run-config example in the docs parses and validates as a real run config, so the
documented options (sandbox, limits, egress...) cannot drift from the code."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from autorl.config import load_config

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"^```toml\n(.*?)^```$", re.MULTILINE | re.DOTALL)
PAGES = ["running.md", "security.md", "gpus.md"]


def examples() -> list[tuple[str, int, str]]:
    found = []
    for page in PAGES:
        for number, body in enumerate(BLOCK.findall((DOCS / page).read_text()), start=1):
            found.append((page, number, body))
    return found


@pytest.mark.parametrize(("page", "number", "body"), examples())
def test_documented_config_is_valid(
    page: str, number: int, body: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.toml"
    path.write_text(body)
    config = load_config(path)
    if config.egress.policy != "none":  # the policy names an installed egress component
        from autorl.registry import get_registry

        get_registry().get("egress", config.egress.policy)
    if "[limits]" in body:
        limits = config.limits.resolve()  # what the sandbox will enforce on this machine
        assert limits.memory_bytes is None or limits.memory_bytes > 0
    if "[grader]" in body and config.grader.gpus:  # the documented split, on those GPUs
        from autorl_runner.gpus import plan
        from autorl_testing.gpus import FakeProbe

        gpus = sorted({*config.limits.gpus, *config.grader.gpus})
        probe = FakeProbe(",".join(f"{g}=0" for g in gpus))
        for name in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"):  # restored afterwards
            monkeypatch.setenv(name, "recorded")
            monkeypatch.delenv(name)
        assert plan(config.limits.gpus, config.grader.gpus, config.device, probe) == "cuda"
        shown = [gpus[int(i)] for i in os.environ["CUDA_VISIBLE_DEVICES"].split(",")]
        assert shown == config.grader.gpus


def test_the_security_page_has_its_examples() -> None:
    assert any(page == "security.md" and "[limits]" in body for page, _, body in examples())
