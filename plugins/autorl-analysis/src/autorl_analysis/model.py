"""The analysis document (``report/analysis.json``): what every analyser fills and every view
reads. Plain dataclasses serialised with :func:`to_json`; the schema is documented in
docs/analysis.md and versioned by :data:`SCHEMA_VERSION`.

Every conclusion carries its :class:`Evidence` (a file of the run and a line, a command, a
number), so a reader can check it, and nothing here comes from a file the agent could have
written without saying so (``Evidence.source`` names where it came from).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Literal

SCHEMA_VERSION = 1

RouteLabel = Literal["sft", "preference", "online_rl", "mixed", "copy", "none", "unknown"]
"""A submission's training route: supervised fine-tuning; preference optimisation (DPO, ORPO,
KTO...); online RL (GRPO, PPO, RLOO, REINFORCE on the model's own samples); more than one of
those (``mixed``, e.g. SFT then GRPO); a copy of the base (no training); ``none`` when no code
trained anything; ``unknown`` when the records do not tell."""

FailureType = Literal[
    "no_submission",
    "invalid_checkpoint",
    "training_crash",
    "timeout",
    "budget_exhausted",
    "regression",
    "evaluator_error",
    "driver_unavailable",
    "agent_error",
]
"""Why a run or a submission did not improve on the baseline; ``detail`` refines it (the
validator's reason class for an invalid checkpoint; ``oom``, ``cuda``, ``import``, ``shape`` or
``other`` for a training crash; which budget ran out)."""

Basis = Literal["observed", "claimed"]
"""Where a finding comes from (docs/analysis.md#claims-and-observations): ``observed`` when
the harness measured or recorded it itself (weights against the base, the gateway's call log,
the events the harness and the sandbox wrote, the submissions log); ``claimed`` when it is read
from text the agent wrote (``agent.log``, its trajectory, its code), which it could forge."""

Severity = Literal["info", "warning", "critical"]
"""``critical``: the score should not be trusted as it stands (a copy of the base, eval data
in the training set, a substituted model); ``warning``: worth a look (probing the grader,
denied network requests); ``info``: noted."""


@dataclass(frozen=True)
class Evidence:
    """Where a conclusion comes from: ``source`` is a path relative to the run directory
    (``code-history.git:<rev>:code/train.py``, ``agent.log``, ``submissions.jsonl``...) or a
    label (``trajectory``, ``grader``); ``line`` 1-based when it points into a text."""

    source: str
    text: str
    line: int | None = None


@dataclass(frozen=True)
class Route:
    label: RouteLabel
    methods: tuple[str, ...] = ()
    """Specific methods found, in the order used: ``sft``, ``dpo``, ``orpo``, ``kto``,
    ``grpo``, ``ppo``, ``rloo``, ``reinforce``..."""
    evidence: tuple[Evidence, ...] = ()
    basis: Basis = "claimed"
    """``observed`` only for ``copy`` (the harness's weight hash); every trained route is read
    from the agent's logs, trajectory or code, so it is ``claimed``."""


@dataclass(frozen=True)
class Failure:
    type: FailureType
    detail: str = ""
    message: str = ""
    evidence: tuple[Evidence, ...] = ()
    basis: Basis = "observed"
    """``claimed`` for tracebacks read from ``agent.log`` or the trajectory."""


@dataclass(frozen=True)
class Flag:
    """An integrity finding, computed by the harness after the run."""

    kind: str
    """``copy_of_base``, ``near_copy_of_base``, ``substituted_model``, ``eval_leakage``,
    ``grader_probing``, ``gateway_misuse``, ``network_denied``, ``base_modified``,
    ``claim_contradicted``, ``fingerprint_unavailable``, ``judge:<category>``..."""
    severity: Severity
    message: str
    evidence: tuple[Evidence, ...] = ()
    submission_id: int | None = None
    value: float | None = None
    """The measured quantity (a distance, an overlap rate) where there is one."""
    threshold: float | None = None


@dataclass(frozen=True)
class SubmissionAnalysis:
    submission_id: int
    status: str
    score: float | None
    elapsed_s: float | None
    code_revision: str | None
    route: Route
    failure: Failure | None = None


@dataclass(frozen=True)
class TimelineEvent:
    """One thing on the run's time axis; ``t`` is seconds since the agent started."""

    t: float
    kind: str
    """``code_revision``, ``command``, ``training_started``, ``training_finished``,
    ``submission``, ``score``, ``budget_warning``, ``driver_spend``, ``agent_end``..."""
    label: str
    data: dict[str, Any] = field(default_factory=dict)
    basis: Basis = "observed"
    """``claimed`` for commands from the trajectory and training lines from ``agent.log``."""


@dataclass(frozen=True)
class Analysis:
    run_id: str
    submissions: tuple[SubmissionAnalysis, ...] = ()
    route: Route | None = None
    """The run as a whole: every method its training logs (else its last code) show."""
    best_route: Route | None = None
    """The route of the best valid submission (the first to reach the best score; None
    without a valid submission)."""
    failures: tuple[Failure, ...] = ()
    """Run-level: why the run as a whole fell short (empty when it improved)."""
    timeline: tuple[TimelineEvent, ...] = ()
    flags: tuple[Flag, ...] = ()
    measurements: dict[str, Any] = field(default_factory=dict)
    """The numbers behind the flags: ``leakage`` (n-gram overlap, calibration, threshold),
    ``distance_to_base`` (submission id -> relative L2 distance) and ``weight_change``
    (submission id -> the observed change of the weights: distance, where it was measured,
    tensors changed)."""
    judge: dict[str, Any] | None = None
    """The LLM judge's structured verdicts, when one was asked (see judge.py)."""
    overhead: dict[str, float] = field(default_factory=dict)
    """Harness time by phase (prepare, baseline, evaluation, report) in seconds."""
    problems: tuple[str, ...] = ()
    """Records that could not be read, and what was therefore not analysed."""
    schema_version: int = SCHEMA_VERSION

    @property
    def flagged(self) -> bool:
        return any(f.severity == "critical" for f in self.flags)


def to_dict(analysis: Analysis) -> dict[str, Any]:
    data = dataclasses.asdict(analysis)
    data["flagged"] = analysis.flagged
    return data


def to_json(analysis: Analysis) -> str:
    return json.dumps(to_dict(analysis), indent=2, default=str) + "\n"
