"""The agent-facing ``description.md``: the shop, the actions, the prompt, the metric.

The agent may know how it is graded (prompt, step limit, decoding, reward), never the eval goals.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autorl_task_webshop.prompt import messages_builder

SPLIT_TEXT = {
    "offline-catalog": (
        "the shipped 1,000-product catalogue generated for this project (10 categories); the "
        "held-out sessions buy other products than the train goals"
    ),
    "webshop-reference": "the official WebShop 1,000-product catalogue and human instructions",
}


PROMPT_TEXT = {
    "react": (
        "the first user message is the rules, one worked example and the first observation; "
        "then each earlier action is an assistant message and each observation a user message "
        '("Observation: ... Action:"); observations older than the last {window} are shortened '
        "to one line"
    ),
    "compact": (
        "one user message a step: short rules, the instruction, every action taken so far and "
        "the current page without the instruction line, each result's title cut to its first "
        "six words (before any ' - ')"
    ),
    "reference": (
        "the reference implementation's zero-shot prompt: a system message (below the example), "
        "then one user message a step with the instruction, the actions the current page "
        "offers, rules, and the last {window} turns as `Observation k: <the page action k led "
        "to>` / `Action k: <action>` lines, then the current page"
    ),
}
READING_TEXT = {
    "reference": (
        "reads the whole reply, stripped, as the action (an `Action:` prefix is dropped and "
        "`choose[` read as `click[`); decoding stops at the first newline"
    ),
}
"""How the grader reads an action from a reply, where a style differs from the default."""
DEFAULT_READING = "takes the first\n`search[...]` or `click[...]` in the reply"


def describe(
    *,
    split: str,
    n_train: int,
    n_eval: int,
    evaluator_config: Mapping[str, Any],
    prompt: str = "react",
) -> str:
    source = SPLIT_TEXT.get(split, SPLIT_TEXT["offline-catalog"])
    window = evaluator_config.get("history_window")
    prompt_text = PROMPT_TEXT[prompt].format(window=window)
    first = "Instruction: <the instruction>\n[Search]"
    messages = messages_builder(prompt)([first], [])
    example_block = "\n".join(f"    {line}" for line in messages[-1]["content"].splitlines())
    system = [m["content"] for m in messages if m["role"] == "system"]
    if system:
        example_block += f"\n\nThe system message:\n\n    {system[0]}"
    reading = READING_TEXT.get(prompt, DEFAULT_READING)
    return f"""# Task: WebShop (interactive shopping, level 3)

Post-train the base model so it shops well: given an instruction such as "i need non slip
running shoes in black color and size 9, and price lower than 60.00 dollars", it searches the
shop, opens a product, picks the options and buys it. You must collect your own rollouts: the
environment runs in your workspace (`kit/`), on the train goals only.

## Data

- `data/train.jsonl`: {n_train} train goals. Source: {source}.
  One JSON object per line with `session_id`, `instruction`, `asin` (the product the
  instruction was written from), `attributes`, `options`, `price_upper`, `query`, `name`,
  `product_category`.
- `kit/autorl_kit.py`: the environment and helpers (needs `rank_bm25`):
  `make_env()` (a Gym-like `WebShopEnv` over the train goals: `obs, info = env.reset(id)`,
  `obs, reward, done, info = env.step(action)`), `load_train()`, `expert_actions(goal)` (a
  scripted expert for warm-up data), `expert_episode(goal)` (the expert's steps as prompt +
  action pairs in the grader's format), `build_messages(...)` and `extract_action(reply)` (the
  grader's prompt and action parsing), `compute_reward(...)`.

The grader plays {n_eval} held-out sessions (instructions you never see) in the same shop.

## Actions (one per turn)

- `search[<keywords>]` on the search page: up to 50 results, 10 per page.
- `click[<button>]`: a product id from the results, `next >`, `< prev`, `back to search`; on a
  product page an option value (e.g. `click[9]`, `click[black]`), `description`, `features`,
  `buy now`. `click[buy now]` ends the session. An invalid action changes nothing but uses a
  step; after {evaluator_config.get("max_steps")} steps without buying the session scores 0.

## Reward and metric

The WebShop reward (Yao et al., 2022) of the purchase, in [0, 1]:
`r_type * (matched attributes + matched options + [price <= bound]) / (attributes + options + 1)`,
where `r_type` is 1 for the right kind of product and lower (down to 0) for another kind.
The score is the **success rate**: the percentage of sessions with reward >= 0.5 (the mean
reward is reported too).

## How the grader prompts the model

For each step the grader sends a chat through the model's own chat template ({prompt} prompt):
{prompt_text}. It decodes greedily
(temperature 0) for at most {evaluator_config.get("max_new_tokens")} new tokens and {reading}.
`kit/autorl_kit.py`'s `build_messages` and `extract_action` are exactly this prompt and this
reading. The first user message looks like this:

{example_block}

Submit a full model directory (merge LoRA adapters first).
"""
