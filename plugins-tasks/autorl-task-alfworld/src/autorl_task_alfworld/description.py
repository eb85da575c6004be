"""The task description the agent reads as ``workspace/description.md``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autorl_task_alfworld.prompt import EXAMPLE_CLEAN

TEMPLATE = """# ALFWorld (level 3, interactive)

Train the model to solve household tasks in ALFWorld, a text game run by the real ALFWorld engine
(TextWorld with ALFWorld's PDDL domain). Each game starts with a room description and a goal,
"Your task is to: ...". Six task types: put an object somewhere; look at an object under a desk
lamp; clean, heat or cool an object and then put it somewhere; put two objects somewhere.

Data: {split}. {n_train} train games are in `kit/` (and listed in `data/train.jsonl`); the model
is scored on {n_eval} held-out games in rooms and with goals that no train game has.

## How a checkpoint is scored

For each held-out game the model plays greedily (temperature {temperature}), at most
{max_steps} steps. Each turn it receives the ReAct prompt below as chat messages and must answer
with ONE line: an action for the game (`go to cabinet 1`, `open fridge 1`, `take apple 1 from
countertop 2`, `move apple 1 to fridge 1`, `heat/cool/clean X with Y`, `use desklamp 1`,
`examine X`, `look`, `inventory`) or a thought `think: ...` (answered `OK.`, uses a step). An
action the game does not know answers `Nothing happens.` and uses a step. Only the last
{history_window} turns are sent in full; earlier turns are reduced to the list of their actions.
At most {max_new_tokens} new tokens are generated per turn. Score = success rate (%): the share
of games whose goal is reached within the step limit.

The first user message holds an instruction and two worked examples, such as:

```
{example}
```

## The kit (train games only)

```python
import sys; sys.path.insert(0, "kit")
import autorl_kit as kit
env = kit.make_env()                      # the real engine on the train games
obs, info = env.reset(kit.train_ids()[0])
obs, reward, done, info = env.step("go to countertop 1")   # info["success"] when done
episode = kit.expert_episode(kit.train_ids()[0])   # ALFWorld's hand-coded expert, as SFT data
messages = kit.build_messages(observations, actions, kit.HISTORY_WINDOW)  # the exact prompt
action = kit.extract_action(model_reply)
```

`expert_episode` gives, for each expert step, the exact chat messages the evaluator would send
and the expert's action: supervised warm-up data. `make_env()` also serves online rollouts
(GRPO and friends). The engine needs the `textworld` and `alfworld` packages (installed).
Submit a full model directory (merge LoRA adapters) through the grading API.
"""


def describe(split: str, n_train: int, n_eval: int, evaluator_config: Mapping[str, Any]) -> str:
    return TEMPLATE.format(
        split=split,
        n_train=n_train,
        n_eval=n_eval,
        max_steps=evaluator_config["max_steps"],
        temperature=evaluator_config["temperature"],
        history_window=evaluator_config["history_window"],
        max_new_tokens=evaluator_config["max_new_tokens"],
        example=EXAMPLE_CLEAN,
    )
