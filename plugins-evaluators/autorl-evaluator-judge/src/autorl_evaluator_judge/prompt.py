"""AlpacaEval 2.0's pairwise judge prompt: template, side randomisation, answer parsing.

The template text comes from the installed ``alpaca-eval`` package: the annotator config
(default ``weighted_alpaca_eval_gpt4_turbo``, AlpacaEval 2.0's judge) names its prompt file,
which is filled by AlpacaEval's ``make_prompts`` and split into chat messages by its
``prompt_to_chatml``. Which answer is shown first is drawn per instruction exactly as
AlpacaEval's ``RandomSwitchTwoColumnsProcessor`` draws it (seeded by the instruction and a seed,
123 by default), so a judge's position bias cannot favour the model systematically.

Deviation: upstream reads the probability of the token ``m`` from the judge's logprobs (a
weighted preference). Driver backends expose no logprobs (Anthropic has none), so we read the
answer text: ``m`` or ``M``, a binary preference (what upstream's ``alpaca_eval_clf_gpt4_turbo``
does with the same prompt).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl.errors import ConfigError
from autorl_evaluator_judge import alpaca

DEFAULT_ANNOTATOR = "weighted_alpaca_eval_gpt4_turbo"
SWITCH_COLUMN = "is_switch_output_1_output_2"
"""AlpacaEval's seed prefix for the side draw (``RandomSwitchTwoColumnsProcessor``)."""
DEFAULT_SIDE_SEED = 123
"""AlpacaEval's default processor seed."""
ANSWER_RE = re.compile(r"^[\s\"'`*(\[]*([mM])(?![A-Za-z])")


@dataclass(frozen=True)
class JudgeTemplate:
    annotator: str
    path: Path
    text: str


@functools.cache
def load_template(annotator: str = DEFAULT_ANNOTATOR) -> JudgeTemplate:
    """The prompt of an AlpacaEval annotator whose judge answers ``m`` or ``M``."""
    import yaml

    root = alpaca.package_dir() / "evaluators_configs"
    config_path = root / annotator / "configs.yaml"
    if not config_path.is_file():
        known = sorted(p.parent.name for p in root.glob("*/configs.yaml"))
        raise ConfigError(
            f"evaluator 'judge': no AlpacaEval annotator config {annotator!r}",
            hint=f"use {DEFAULT_ANNOTATOR} (AlpacaEval 2.0); installed: {', '.join(known)}",
        )
    config = (yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}).get(annotator) or {}
    parser = config.get("completion_parser_kwargs") or {}
    if parser.get("numerator_token") != "m" or "prompt_template" not in config:
        raise ConfigError(
            f"evaluator 'judge': annotator {annotator!r} does not answer with 'm' or 'M'",
            hint=f"use {DEFAULT_ANNOTATOR} or another alpaca_eval_clf-style annotator",
        )
    path = root / config["prompt_template"]
    text = path.read_text(encoding="utf-8")
    missing = [p for p in ("{instruction}", "{output_1}", "{output_2}") if p not in text]
    if missing:
        raise ConfigError(f"AlpacaEval template {path} lacks {', '.join(missing)}")
    return JudgeTemplate(annotator=annotator, path=path, text=text)


def is_switched(instruction: str, seed: int = DEFAULT_SIDE_SEED) -> bool:
    """Whether the model's answer is shown first (AlpacaEval's seeded draw per instruction)."""
    utils = alpaca.modules().utils
    return bool(
        utils.random_seeded_choice(
            seed=SWITCH_COLUMN + instruction + str(seed), choices=[False, True]
        )
    )


def judge_messages(
    template: JudgeTemplate, instruction: str, first: str, second: str
) -> list[dict[str, Any]]:
    """The chat messages asking which of ``first`` ("m") and ``second`` ("M") is better."""
    import pandas as pd

    utils = alpaca.modules().utils
    frame = pd.DataFrame([{"instruction": instruction, "output_1": first, "output_2": second}])
    prompts, _ = utils.make_prompts(frame, template.text)
    return [
        {"role": m["role"], "content": m["content"]} for m in utils.prompt_to_chatml(prompts[0])
    ]


def parse_answer(text: str) -> int | None:
    """1 when the judge picked the first output (``m``), 2 for the second (``M``), else None."""
    match = ANSWER_RE.match(text or "")
    if match is None:
        return None
    return 1 if match.group(1) == "m" else 2


def preference(shown_winner: int | None, switched: bool) -> float:
    """AlpacaEval's preference (1 reference wins, 2 model wins; NaN unusable) from the winner
    among the outputs as shown."""
    if shown_winner is None:
        return float("nan")
    if switched:
        return 3.0 - shown_winner
    return float(shown_winner)
