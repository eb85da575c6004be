"""Lockstep play with scripted policies (no model): batching, slot refill, invalid actions."""

from __future__ import annotations

import re
from pathlib import Path

import counter_protocol as counter
import pytest
from autorl_evaluator_rollout.lockstep import Episode, Lockstep, Reply, fallback_action

from autorl.errors import ConfigError

STATE_RE = re.compile(r"count=(\d+) target=(-?\d+)")


def counting_policy(prompts: list[list[dict[str, str]]]) -> list[Reply]:
    """Counts up to the target, then stops; a negative target gets a reply with no action."""
    replies = []
    for messages in prompts:
        count, target = map(int, STATE_RE.findall(messages[-1]["content"])[-1])
        if target < 0:
            replies.append(Reply("I am not sure what to do\nmaybe later", tokens=7))
        else:
            replies.append(Reply("inc" if count < target else "Action: stop", tokens=2))
    return replies


def play(tmp_path: Path, targets: list[int], batch_size: int, **kwargs) -> tuple[Lockstep, list]:
    eval_path = counter.write_sessions(tmp_path / f"s{batch_size}.jsonl", targets)
    sizes: list[int] = []
    config = kwargs.pop("config", {"max_steps": 8})

    def policy(prompts):
        sizes.append(len(prompts))
        return counting_policy(prompts)

    lockstep = Lockstep(
        make_env=lambda: counter.make_env(config, eval_path),
        policy=policy,
        build_messages=counter.build_messages,
        extract_action=counter.extract_action,
        batch_size=batch_size,
        episode_metrics=counter.episode_metrics,
        **kwargs,
    )
    episodes = lockstep.run(counter.load_sessions(eval_path))
    return lockstep, [sizes, episodes]


def test_lockstep_equals_one_at_a_time(tmp_path: Path) -> None:
    targets = [3, 0, 1, 5, 2, 0, 4]
    batched, (sizes, episodes) = play(tmp_path, targets, batch_size=3)
    single, (single_sizes, alone) = play(tmp_path, targets, batch_size=1)
    assert [e.record() for e in episodes] == [e.record() for e in alone]
    assert [e.session_id for e in episodes] == [f"c{i}" for i in range(len(targets))]
    assert all(e.success and e.done for e in episodes)
    assert [e.steps for e in episodes] == [t + 1 for t in targets]
    assert max(sizes) == 3 and set(single_sizes) == {1}
    assert batched.turns < single.turns == sum(t + 1 for t in targets)
    assert batched.envs_made == 3 and single.envs_made == 1


def test_a_finished_episode_frees_its_slot_for_the_next_session(tmp_path: Path) -> None:
    """One long episode (3 steps) next to four one-step ones: the second slot is refilled every
    turn, so the batch stays full until the sessions run out ([2, 2, 2, 1], not [2, 2, 2, 2, 1]
    as fixed batches of two would give)."""
    lockstep, (sizes, episodes) = play(tmp_path, [2, 0, 0, 0, 0], batch_size=2)
    assert sizes == [2, 2, 2, 1]
    assert lockstep.turns == 4
    assert [e.steps for e in episodes] == [3, 1, 1, 1, 1]


def test_unparseable_replies_are_sent_as_their_first_line_and_count(tmp_path: Path) -> None:
    _, (_, episodes) = play(tmp_path, [-1, 1], batch_size=2, config={"max_steps": 3})
    lost, won = episodes
    assert lost.actions == ["I am not sure what to do"] * 3
    assert lost.parsed == [False] * 3 and lost.valid == [False] * 3
    assert lost.done and not lost.success and lost.final_info["truncated"]
    assert lost.observations[1].startswith("Invalid action")
    assert lost.tokens == 21
    assert won.success and won.valid == [True, True] and won.metrics == {"final_count": 1.0}


def test_progress_reports_each_finished_episode(tmp_path: Path) -> None:
    calls: list[tuple[int, int]] = []
    seen: list[Episode] = []
    play(
        tmp_path,
        [1, 0, 2],
        batch_size=2,
        progress=lambda d, t: calls.append((d, t)),
        on_episode=seen.append,
    )
    # each finished episode is reported, and every turn too (the harness's evaluation deadline
    # is checked in the callback, so no turn of a long batch goes unchecked)
    assert calls[0] == (0, 3) and calls[-1] == (3, 3)
    done = [d for d, _ in calls]
    assert done == sorted(done) and {1, 2, 3} <= set(done) and all(t == 3 for _, t in calls)
    assert len(calls) > 4
    assert sorted(e.session_id for e in seen) == ["c0", "c1", "c2"]


def test_an_env_that_never_ends_is_stopped(tmp_path: Path) -> None:
    _, (_, episodes) = play(tmp_path, [-1], batch_size=1, config={"max_steps": 99}, max_steps=4)
    (episode,) = episodes
    assert episode.steps == 4 and episode.stopped_by_evaluator and not episode.success


def test_an_unknown_session_is_a_config_error(tmp_path: Path) -> None:
    eval_path = counter.write_sessions(tmp_path / "s.jsonl", [1])
    lockstep = Lockstep(
        make_env=lambda: counter.make_env({}, eval_path),
        policy=counting_policy,
        build_messages=counter.build_messages,
        extract_action=counter.extract_action,
    )
    with pytest.raises(ConfigError, match="cannot reset to eval session 'nope'"):
        lockstep.run(["nope"])


def test_no_session_plays_nothing() -> None:
    lockstep = Lockstep(
        make_env=lambda: pytest.fail("no environment is needed"),
        policy=counting_policy,
        build_messages=counter.build_messages,
        extract_action=counter.extract_action,
    )
    assert lockstep.run([]) == [] and lockstep.turns == 0


@pytest.mark.parametrize(
    ("reply", "sent"), [("x\ny", "x"), ("\n\n  click[a] \n", "click[a]"), ("", ""), ("  ", "")]
)
def test_fallback_action_is_the_first_nonempty_line(reply: str, sent: str) -> None:
    assert fallback_action(reply) == sent


def test_raw_text_prompts_get_the_reset_info(tmp_path: Path) -> None:
    """A ``build_messages`` with an ``info`` parameter gets each episode's reset info and may
    return a ``str`` (raw text): the policy receives it as it is."""
    import counter_text_protocol as text
    from autorl_evaluator_rollout.protocol import load_protocol

    protocol = load_protocol("counter_text_protocol")
    assert protocol.messages_take_info and not load_protocol("counter_protocol").messages_take_info
    assert protocol.stop == ("\n",)
    eval_path = counter.write_sessions(tmp_path / "s.jsonl", [2, 0, 1])
    seen: list[str] = []

    def policy(prompts: list[str]) -> list[Reply]:
        seen.extend(prompts)
        replies = []
        for prompt in prompts:
            count, target = map(int, STATE_RE.findall(prompt)[-1])
            replies.append(Reply(" inc" if count < target else " stop"))
        return replies

    lockstep = Lockstep(
        make_env=lambda: text.make_env({}, eval_path),
        policy=policy,
        build_messages=protocol.build_messages,
        extract_action=protocol.extract_action,
        batch_size=2,
        prompt_info=protocol.messages_take_info,
    )
    episodes = lockstep.run(protocol.load_sessions(eval_path))
    assert all(e.success for e in episodes) and [e.steps for e in episodes] == [3, 1, 2]
    assert all(isinstance(p, str) for p in seen)
    assert "Count to 2, then stop.\ncount=0 target=2\n> inc\ncount=1 target=2\n>" in seen
    assert episodes[0].reset_info == {"intro": "Count to 2, then stop."}
    assert "reset_info" not in episodes[0].record()
