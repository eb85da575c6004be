"""The ``judge`` evaluator's options: one typed model, the shared error format.

Meaning of each option: docs/evaluators/judge.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, StrictBool, StrictInt, field_validator, model_validator

from autorl.options import OptionsModel, PositiveInt, parse_options

CASSETTE_MODES = ("record", "replay", "auto")
GLMS = ("length_controlled_v1", "length_controlled_minimal", "length_controlled_noreg")
SCRIPTED_JUDGE = "scripted/alpacaeval_judge_v1.yaml"
"""The offline judge: a scripted driver that needs no key and no network."""


def judge_driver_name(value: str) -> str:
    """``value`` as a judge's driver name ``<backend>/<model>`` (stripped), else the
    ``ValueError`` a pydantic validator turns into the option's error; the task's ``judge``
    option and this evaluator's check it the same way."""
    if "/" not in value.strip().strip("/"):
        raise ValueError(
            "is not a driver name <backend>/<model>: for example openai/gpt-4.1, "
            f"anthropic/claude-sonnet-4-6 or {SCRIPTED_JUDGE} (offline)"
        )
    return value.strip()


class Options(OptionsModel):
    """``[evaluator_options]`` of the judge evaluator."""

    judge: str = Field(
        ..., description="the judge's driver <backend>/<model> (scripted/... offline)"
    )
    judge_options: dict[str, Any] = Field({}, description="driver options of the judge")
    annotator: str = Field("weighted_alpaca_eval_gpt4_turbo", description="AlpacaEval template")
    judge_max_tokens: PositiveInt = Field(1, description="tokens of the judge's verdict")
    judge_temperature: float | None = Field(None, ge=0, le=2, description="None: provider's")
    stream: StrictBool = Field(False, description="stream the judge's answers")
    concurrency: PositiveInt = Field(4, description="judge calls at once")
    cassette: Path | None = Field(None, description="record/replay file of judge calls")
    cassette_mode: Literal["record", "replay", "auto"] = Field("record", description="cassette")
    cache: StrictBool = Field(True, description="cache verdicts across runs")
    cache_dir: Path | None = Field(None, description="where verdicts are cached")
    side_seed: StrictInt = Field(123, description="which side each answer is shown on")
    glm: Literal["length_controlled_v1", "length_controlled_minimal", "length_controlled_noreg"] = (
        Field("length_controlled_minimal", description="AlpacaEval's length correction")
    )
    glm_data_dir: Path | None = Field(None, description="leaderboard data of the GLM")
    scripts_dir: Path | None = Field(None, description="scripted judges' directory")
    max_new_tokens: PositiveInt = Field(256, description="tokens of each answer")
    batch_size: PositiveInt = Field(8, description="prompts generated together")
    temperature: float = Field(0.0, ge=0, le=2, description="0: greedy")
    device: str = Field("auto", description="auto, cpu or cuda")
    limit: PositiveInt | None = Field(None, description="first N instructions only")

    @field_validator("judge")
    @classmethod
    def _driver_name(cls, value: str) -> str:
        return judge_driver_name(value)

    @model_validator(mode="after")
    def _replay_needs_a_cassette(self) -> Options:
        if self.cassette_mode == "replay" and self.cassette is None:
            raise ValueError(
                "cassette_mode 'replay' needs a cassette: set cassette = "
                "'path/to/judge-cassette.jsonl' (recorded with cassette_mode 'record')"
            )
        return self


def settings(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The validated options as a dict (what the judge's helpers read)."""
    options = parse_options(Options, config, who="evaluator 'judge'")
    return options.model_dump()
