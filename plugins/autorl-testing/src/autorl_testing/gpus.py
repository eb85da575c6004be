"""A GPU probe over fake device lists, for testing GPU plans and budgets on machines without
GPUs: ``AUTORL_GPU_PROBE=autorl_testing.gpus:FakeProbe`` and ``AUTORL_FAKE_GPUS="0=100,1=0"``
(device-node number = utilisation percent, in NVML order)."""

from __future__ import annotations

import os

FAKE_ENV = "AUTORL_FAKE_GPUS"


class FakeProbe:
    """The GPUs ``$AUTORL_FAKE_GPUS`` lists, each always at its stated utilisation."""

    def __init__(self, spec: str | None = None) -> None:
        spec = os.environ.get(FAKE_ENV, "") if spec is None else spec
        self.busy: dict[int, float] = {}
        for item in filter(None, (p.strip() for p in spec.split(","))):
            minor, _, util = item.partition("=")
            self.busy[int(minor)] = float(util or 0)

    def minors(self) -> list[int]:
        return list(self.busy)

    def utilization(self, minor: int) -> float:
        return self.busy[minor]
