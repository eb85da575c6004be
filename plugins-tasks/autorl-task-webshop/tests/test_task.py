"""The task: prepare, the train-only kit, options, the official-data loader, the entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from autorl_task_webshop import official
from autorl_task_webshop.catalog import SEP, load_goals
from autorl_task_webshop.prompt import (
    REFERENCE_SYSTEM,
    build_compact_messages,
    build_messages,
    build_reference_messages,
    extract_action,
    extract_reference_action,
    page_actions,
)
from autorl_task_webshop.task import EVALUATOR_CONFIG, WebShopTask
from autorl_testing import conformance
from autorl_testing.workspace import run_kit

from autorl.errors import ConfigError
from autorl.types import TaskContext


class TestWebShopConformance(conformance.TaskConformance):
    plugin_module = "autorl_task_webshop.plugin"


def prepare(cache: Path, **options: object):
    return WebShopTask().prepare(TaskContext(cache_dir=cache, options=options))


def test_prepare_splits_config_and_metric(tmp_path: Path) -> None:
    prepared = prepare(tmp_path)
    train = load_goals(prepared.train_files[0])
    evals = load_goals(prepared.eval_path)
    assert (len(train), len(evals)) == (500, 40)
    assert prepared.evaluator == "rollout" and prepared.metric == "success_rate"
    config = prepared.evaluator_config
    assert prepared.contract == "autorl_task_webshop.protocol_compact"
    assert config["max_steps"] == 8 and config["max_new_tokens"] == 24
    assert Path(config["catalog_path"]).is_file()
    assert {"max_new_tokens", "batch_size", "history_window"} <= set(config)
    assert "search[" in prepared.description and "reward >= 0.5" in prepared.description
    again = prepare(tmp_path)
    assert again.eval_path == prepared.eval_path and again.kit_dir == prepared.kit_dir


def test_prompt_style_reaches_the_grader_and_the_kit(tmp_path: Path) -> None:
    react = prepare(tmp_path, prompt="react", eval_size=100)
    assert react.contract == "autorl_task_webshop.protocol"
    assert len(load_goals(react.eval_path)) == 100
    compact = prepare(tmp_path)
    assert compact.kit_dir != react.kit_dir
    for prepared, style in ((react, "react"), (compact, "compact")):
        settings = json.loads((prepared.kit_dir / "webshop_data" / "settings.json").read_text())
        assert settings["prompt"] == style
    assert "Actions so far: none" in compact.description
    assert "Example:" in react.description


def test_options_resize_and_limit(tmp_path: Path) -> None:
    prepared = prepare(tmp_path, eval_size=10, train_size=50, max_steps=8)
    assert len(load_goals(prepared.eval_path)) == 10
    assert len(load_goals(prepared.train_files[0])) == 50
    assert prepared.evaluator_config["max_steps"] == 8


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"split": "x"}, "unknown option 'split'"),
        ({"eval_size": 0}, r"eval_size: Input should be greater than 0 \(got 0\)"),
        ({"max_steps": "ten"}, "max_steps: Input should be a valid integer"),
        ({"eval_size": 101}, "has 100 eval goals"),
        ({"prompt": "verbose"}, "prompt: Input should be 'compact', 'react' or 'reference'"),
        ({"data_path": "/nonexistent/webshop"}, "is not a directory"),
    ],
)
def test_bad_options_are_precise_errors(tmp_path: Path, options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        prepare(tmp_path, **options)


def test_kit_holds_no_eval_goal(tmp_path: Path) -> None:
    prepared = prepare(tmp_path)
    assert prepared.kit_dir is not None
    evals = load_goals(prepared.eval_path)
    text = "\n".join(
        p.read_text(encoding="utf-8") for p in sorted(prepared.kit_dir.rglob("*")) if p.is_file()
    )
    for goal in evals:
        assert goal.session_id not in text
        assert goal.instruction not in text
    assert "goals_eval" not in text and "eval.jsonl" not in text


def test_kit_runs_the_env_on_train_goals_only(tmp_path: Path) -> None:
    prepared = prepare(tmp_path)
    assert prepared.kit_dir is not None
    script = """
env = kit.make_env()
goal = kit.load_train()[0]
episode = kit.expert_episode(goal, env)
by_id = kit.expert_episode(kit.train_ids()[1])
assert by_id["success"] and by_id["steps"][0]["messages"] == kit.build_messages(
    [env.reset(kit.train_ids()[1])[0]], [], kit.HISTORY_WINDOW)
assert kit.PROMPT_STYLE == "compact" and kit.MAX_STEPS == 8 and env.max_steps == 8
try:
    env.reset("eval-0000")
    refused = False
except KeyError:
    refused = True
print(json.dumps({"n": len(env.session_ids), "reward": episode["reward"], "refused": refused,
                  "steps": len(episode["steps"]), "modules": sorted(sys.modules)}))
"""
    out = run_kit(tmp_path / "workspace", script, kit_dir=prepared.kit_dir, timeout=60)
    assert (out["n"], out["reward"], out["refused"]) == (500, 1.0, True)
    assert "autorl_task_webshop" not in out["modules"]  # the kit is self-contained
    assert "torch" not in out["modules"]


def test_kit_follows_the_reference_style(tmp_path: Path) -> None:
    """With the reference prompt the kit's ``build_messages`` and ``extract_action`` are the
    grader's, so an agent's SFT data (``expert_episode``) is in the graded format."""
    prepared = prepare(tmp_path, prompt="reference", eval_size=4)
    script = """
episode = kit.expert_episode(kit.train_ids()[0])
print(json.dumps({"style": kit.PROMPT_STYLE, "window": kit.HISTORY_WINDOW,
                  "last": episode["steps"][-1]["messages"], "success": episode["success"],
                  "read": [kit.extract_action(r) for r in ("Action: click[x]", "go click[x]")]}))
"""
    out = run_kit(tmp_path / "workspace", script, kit_dir=prepared.kit_dir, timeout=60)
    assert (out["style"], out["window"], out["success"]) == ("reference", 5, True)
    assert out["read"] == ["click[x]", None]
    system, user = out["last"]
    assert system["content"] == REFERENCE_SYSTEM and "Available actions:" in user["content"]


def test_prompt_builder_and_action_extraction() -> None:
    messages = build_messages(["obs0", "obs1", "obs2"], ["search[a]", "click[b0x]"], 1)
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert "obs0" in messages[0]["content"] and "search[<keywords>]" in messages[0]["content"]
    assert "shortened" in messages[2]["content"] and "obs2" in messages[4]["content"]
    with pytest.raises(ValueError, match="one more observation"):
        build_messages(["o"], ["search[a]"])
    assert extract_action("Action: click[ Buy  Now ]\nmore") == "click[Buy Now]"
    assert extract_action("I think SEARCH[red mug] is best") == "search[red mug]"
    assert extract_action("no action") is None
    assert EVALUATOR_CONFIG["max_new_tokens"] >= 32


def test_compact_prompt_is_short_and_complete() -> None:
    page = (
        "Instruction: i need a red mug, and price lower than 20.00 dollars\n[Back To Search]\n"
        "Page 1 (Total results: 2)\n[Next >]\n"
        "[b0mug1] Acme Ceramic Coffee Mug Large Handle Red - Classic, Pro Edition | $12.00"
    )
    first = "WebShop\nInstruction: i need a red mug, and price lower than 20.00 dollars\n[Search]"
    messages = build_compact_messages([first, page], ["search[red mug]"])
    assert len(messages) == 1 and messages[0]["role"] == "user"
    text = messages[0]["content"]
    assert "Instruction: i need a red mug" in text and "Actions so far: search[red mug]" in text
    assert "[b0mug1] Acme Ceramic Coffee Mug Large Handle $12.00" in text
    assert "Total results" not in text and text.count("Instruction:") == 1
    assert build_compact_messages([first], [])[0]["content"].count("Actions so far: none") == 1
    with pytest.raises(ValueError, match="one more observation"):
        build_compact_messages(["o"], ["search[a]"])


SEARCH_PAGE = "WebShop\nInstruction: i need a red mug, and price lower than 20.00 dollars\n[Search]"
RESULTS_PAGE = (
    "Instruction: i need a red mug, and price lower than 20.00 dollars\n[Back To Search]\n"
    "Page 1 (Total results: 2)\n[Next >]\n"
    "[b0mug1] Acme Mug | $12.00\n[b0mug2] Other Mug | $30.00"
)
ITEM_PAGE = (
    "Instruction: i need a red mug, and price lower than 20.00 dollars\n[Back To Search]\n"
    "[< Prev]\ncolor: [red]* [blue]\nAcme Mug\nPrice: $12.00\nAttributes: ceramic\n"
    "[Description] [Features] [Buy Now]"
)


def test_reference_prompt_is_the_reference_codes() -> None:
    """RD-Agent autorl_bench's WebShop eval, word for word: its system message; one user
    message with the instruction, the page's actions indented by two spaces, its rules, then
    per earlier turn ``Observation k: <page after action k>`` / ``Action k: <action k>`` (the
    last 5) and the current page as ``Observation n+1`` (shown twice, as there)."""
    observations = [SEARCH_PAGE, RESULTS_PAGE, ITEM_PAGE]
    actions = ["search[red mug]", "click[b0mug1]"]
    system, user = build_reference_messages(observations, actions, 5)
    assert system == {
        "role": "system",
        "content": "You are a helpful shopping assistant browsing an e-commerce website. "
        "Given a user instruction, current observation, and available actions, pick the best "
        "action to find and purchase a matching product. Output ONLY one action (e.g., "
        "'search[red shoes]', 'click[buy now]') with NO extra text, NO explanation.",
    }
    assert user["role"] == "user"
    assert user["content"] == (
        "You are shopping on an e-commerce website. Find and purchase a product matching the "
        "user's instruction.\n\n"
        "Instruction: i need a red mug, and price lower than 20.00 dollars\n\n"
        "Available actions:\n  click[back to search]\n  click[< prev]\n  click[description]\n"
        "  click[features]\n  click[buy now]\n  click[red]\n  click[blue]\n\n"
        "Rules:\n- Output ONLY one action from the available actions list above.\n"
        "- For search, use: search[your query]\n- For clicking, use: click[exact text from the "
        "list]\n- Do NOT output anything other than the action.\n\nNow it's your turn:\n"
        f"\nObservation 1: {RESULTS_PAGE}\nAction 1: search[red mug]\n"
        f"\nObservation 2: {ITEM_PAGE}\nAction 2: click[b0mug1]\n"
        f"\nObservation 3: {ITEM_PAGE}\nAction 3:"
    )
    first = build_reference_messages([SEARCH_PAGE], [])[1]["content"]
    assert "Available actions:\n  search[<your query>]\n\nRules:" in first
    assert first.endswith(f"Now it's your turn:\n\nObservation 1: {SEARCH_PAGE}\nAction 1:")
    # seven turns, a window of five: turns 3-7 are shown, numbered as taken
    pages = [SEARCH_PAGE] + [RESULTS_PAGE] * 7
    text = build_reference_messages(pages, [f"click[next >{i}]" for i in range(7)], 5)[1]
    content = text["content"]
    assert "Action 2:" not in content and "Action 3: click[next >2]" in content
    assert content.count("\nObservation ") == 6 and content.endswith("Action 8:")


def test_reference_action_reading_is_the_reference_codes() -> None:
    """The reference strips the reply, drops an ``Action:`` prefix and reads ``choose[`` as
    ``click[``; what is left is the action, whole (text around it makes it invalid)."""
    assert extract_reference_action(" click[b0mug1] ") == "click[b0mug1]"
    assert extract_reference_action("Action: search[red mug]") == "search[red mug]"
    assert extract_reference_action("choose[red]") == "click[red]"
    assert extract_reference_action("I will click[buy now]") is None
    assert extract_reference_action("click[buy now] because") is None
    assert extract_action("I will click[buy now]") == "click[buy now]"  # the other styles


def test_page_actions_are_what_the_environment_offers(shop, train_goals) -> None:
    """The reference lists the actions WebShop offers on the page; the page text shows every
    button, and reading them back gives the environment's own list on every page the expert
    and some wrong moves reach (invalid-action notes and description pages included)."""
    from autorl_task_webshop.env import WebShopEnv
    from autorl_task_webshop.expert import expert_actions

    env = WebShopEnv(shop, train_goals[:60], max_steps=50)
    pages = bought = 0
    for goal in train_goals[:60]:
        observation, info = env.reset(goal.session_id)
        plan = expert_actions(goal, shop)
        moves = [plan[0], "click[nowhere]", "click[next >]", "click[< prev]", *plan[1:2]]
        moves += ["click[description]", "click[< prev]", "click[features]", "click[< prev]"]
        for action in [*moves, *plan[2:]]:
            expected = [
                "search[<your query>]" if a == "search[<query>]" else a
                for a in info["available_actions"]
            ]
            assert page_actions(observation) == expected, observation
            pages += 1
            observation, _, done, info = env.step(action)
            if done:
                bought += 1
                assert page_actions(observation) == []
                break
    assert pages > 600 and bought > 40


def _write_official(path: Path, n_products: int = 30) -> None:
    """A tiny data set in the official files' layout (same keys as the reference)."""
    items, attrs, human = [], {}, {}
    for i in range(n_products):
        asin = f"B0OFF{i:05d}"
        items.append(
            {
                "asin": asin,
                "name": f"Acme Widget {i} Deluxe",
                "full_description": "A widget.",
                "small_description": ["sturdy"],
                "pricing": "$10.00" if i % 2 else "$12.00 - $18.00",
                "customization_options": {"Color": [{"value": "Red", "image": None}]},
                "category": "garden",
                "query": "widget",
                "product_category": f"Garden {SEP} Tools {SEP} Widgets",
                "images": [""],
            }
        )
        attrs[asin] = {"attributes": ["sturdy"]}
        human[asin] = [
            {
                "instruction": f"i need a sturdy widget number {i} in red.",
                "instruction_attributes": ["sturdy"],
                "instruction_options": ["red"],
            },
            {"instruction": "skipped: no attributes", "instruction_attributes": []},
        ]
    (path / "items_shuffle_1000.json").write_text(json.dumps(items))
    (path / "items_ins_v2_1000.json").write_text(json.dumps(attrs))
    (path / "items_human_ins.json").write_text(json.dumps(human))


def test_official_files_load_with_disjoint_targets(tmp_path: Path) -> None:
    data = tmp_path / "webshop"
    data.mkdir()
    _write_official(data)
    prepared = prepare(tmp_path / "cache", data_path=str(data), eval_size=10)
    assert prepared.split == "webshop-reference"
    evals = load_goals(prepared.eval_path)
    train = load_goals(prepared.train_files[0])
    assert [g.session_id for g in evals] == [f"fixed_{i}" for i in range(10)]
    assert len(train) == 20 and not {g.asin for g in train} & {g.asin for g in evals}
    goal = evals[0]
    assert goal.instruction.endswith("dollars") and "." not in goal.instruction.split(",")[0]
    assert goal.options == ("red",) and goal.attributes == ("sturdy",)
    catalog = json.loads(Path(prepared.evaluator_config["catalog_path"]).read_text())
    assert len(catalog) == 30 and catalog[0]["options"] == {"color": ["red"]}
    kit_goals = load_goals(prepared.kit_dir / "webshop_data" / "goals_train.json")
    assert {g.session_id for g in kit_goals} == {g.session_id for g in train}


def test_reference_protocol_is_the_reference_codes(tmp_path: Path) -> None:
    """With the official data the grader plays the reference's protocol (RD-Agent's
    autorl_bench WebShop eval): 100 sessions, 50 steps, 100 new tokens, the last 5 turns,
    greedy, success at reward 0.5; the kit follows the same step limit and window."""
    data = tmp_path / "webshop"
    data.mkdir()
    _write_official(data, n_products=300)
    prepared = prepare(tmp_path / "cache", data_path=str(data))
    config = prepared.evaluator_config
    assert len(load_goals(prepared.eval_path)) == 100
    assert (config["max_steps"], config["max_new_tokens"], config["history_window"]) == (50, 100, 5)
    assert config["temperature"] == 0.0 and config["success_threshold"] == 0.5
    settings = json.loads((prepared.kit_dir / "webshop_data" / "settings.json").read_text())
    assert (settings["max_steps"], settings["history_window"]) == (50, 5)
    assert prepared.contract == "autorl_task_webshop.protocol_reference"
    assert settings["prompt"] == "reference"
    assert "Available actions:" in prepared.description
    assert REFERENCE_SYSTEM in prepared.description


def test_official_files_missing_is_a_precise_error(tmp_path: Path) -> None:
    data = tmp_path / "webshop"
    data.mkdir()
    (data / "items_shuffle_1000.json").write_text("[]")
    with pytest.raises(ConfigError, match=r"lacks items_ins_v2_1000\.json, items_human_ins\.json"):
        prepare(tmp_path / "cache", data_path=str(data))
    assert official.missing_files(data) == ["items_ins_v2_1000.json", "items_human_ins.json"]


def test_entry_point_registers_the_task() -> None:
    from importlib.metadata import entry_points

    names = {ep.name: ep.value for ep in entry_points(group="autorl.plugins")}
    assert names.get("autorl-task-webshop") == "autorl_task_webshop.plugin"
