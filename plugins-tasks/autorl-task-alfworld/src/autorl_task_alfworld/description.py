"""The task description the agent reads as ``workspace/description.md``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autorl_task_alfworld.prompt import EXAMPLE_CLEAN, REACT_PROMPTS_FILE

TEMPLATE = """# ALFWorld (level 3, interactive)

Train the model to solve household tasks in ALFWorld, a text game run by the real ALFWorld engine
(TextWorld with ALFWorld's PDDL domain). Each game starts with a room description and a goal,
"Your task is to: ...". Six task types: put an object somewhere; look at an object under a desk
lamp; clean, heat or cool an object and then put it somewhere; put two objects somewhere.

Data: {split}. {n_train} train games are in `kit/` (and listed in `data/train.jsonl`); the model
is scored on {n_eval} held-out games in rooms and with goals that no train game has.

{scoring}## The kit (train games only)

```python
import sys; sys.path.insert(0, "kit")
import autorl_kit as kit
env = kit.make_env()                      # the real engine on the train games
obs, info = env.reset(kit.train_ids()[0])
obs, reward, done, info = env.step("go to countertop 1")   # info["success"] when done
episode = kit.expert_episode(kit.train_ids()[0])   # ALFWorld's hand-coded expert, as SFT data
{kit_prompt}
```

{kit_note} `make_env()` also serves online rollouts
(GRPO and friends). The engine needs the `textworld` and `alfworld` packages (installed).
Submit a full model directory (merge LoRA adapters) through the grading API.
"""

CHAT_SCORING = """## How a checkpoint is scored

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

"""

REFERENCE_SCORING = """## How a checkpoint is scored

For each held-out game the model plays greedily (temperature {temperature}), at most
{max_steps} steps, with the ReAct paper's ALFWorld prompt as RD-Agent's autorl_bench sends it:
RAW TEXT, no chat template. The prompt is the line "Interact with a household to solve a task.
Here are two examples.", the two ReAct examples of the game's task type (from
`kit/{examples}`, the ReAct repository's prompts/alfworld_3prompts.json), "Here is the task.",
the first observation, then `>`; after each action the prompt grows by
` <action>\\n<observation>\\n>` (the whole history, never shortened). The model continues the
text after `>`; generation stops at the first newline or after {max_new_tokens} new tokens, and
the reply, stripped, is sent to the game as it is: an action (`go to cabinet 1`, `take apple 1
from countertop 2`, `move apple 1 to fridge 1`, `heat/cool/clean X with Y`, `use desklamp 1`,
`open`/`close`/`examine X`, `look`, `inventory`) or a thought `think: ...` (answered `OK.`,
uses a step). Note that the examples write `put X in/on Y` where this engine wants `move X to
Y`. An action the game does not know answers `Nothing happens.` and uses a step. Score =
success rate (%): the share of games whose goal is reached within the step limit.

"""

CHAT_KIT = """messages = kit.build_messages(observations, actions, kit.HISTORY_WINDOW)
action = kit.extract_action(model_reply)   # the grader's exact prompt and action parsing"""
REFERENCE_KIT = """prompt = kit.grader_prompt(session_id, observations, actions)  # raw text
action = kit.grader_action(model_reply)   # the reply stripped"""
CHAT_NOTE = """`expert_episode` gives, for each expert step, the exact chat messages the evaluator
would send and the expert's action: supervised warm-up data."""
REFERENCE_NOTE = """`expert_episode` gives, for each expert step, the exact raw-text prompt the
evaluator would send (`"prompt"`, a string to continue: train on ` <action>` after it, no chat
template; `"messages"` is the chat form, not what the grader sends) and the expert's action:
supervised warm-up data. `kit.make_env()` plays as the grader does."""


def describe(
    split: str,
    n_train: int,
    n_eval: int,
    evaluator_config: Mapping[str, Any],
    prompt: str = "chat",
) -> str:
    reference = prompt == "reference"
    values = {
        "max_steps": evaluator_config["max_steps"],
        "temperature": evaluator_config["temperature"],
        "history_window": evaluator_config["history_window"],
        "max_new_tokens": evaluator_config["max_new_tokens"],
        "example": EXAMPLE_CLEAN,
        "examples": REACT_PROMPTS_FILE,
    }
    scoring = (REFERENCE_SCORING if reference else CHAT_SCORING).format(**values)
    return TEMPLATE.format(
        split=split,
        n_train=n_train,
        n_eval=n_eval,
        scoring=scoring,
        kit_prompt=REFERENCE_KIT if reference else CHAT_KIT,
        kit_note=REFERENCE_NOTE if reference else CHAT_NOTE,
    )
