"""Batched generation on the real tiny model: same answers as one by one, in input order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from autorl_hf.generation import (
    Generator,
    cut_at_stop,
    generate,
    generate_completions,
    generate_one_by_one,
    pick_backend,
    render,
)

QUESTIONS = [
    "What is 2 + 3?",
    "What is 41 + 17?",
    "Tom has 3 apples and buys 4 more. How many apples does he have now?",
    "What is 9 + 9?",
    "A shop sells 12 pens a day for 5 days. How many pens does it sell?",
    "What is 70 + 6?",
]


def chat(question: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": question}]


def test_batched_greedy_equals_one_by_one(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    prompts = [chat(q) for q in QUESTIONS]
    batched = generate(model, tokenizer, prompts, max_new_tokens=24, batch_size=4)
    single = generate_one_by_one(model, tokenizer, prompts, max_new_tokens=24)
    assert batched == single
    assert all(isinstance(text, str) for text in batched)
    assert len(set(batched)) > 1, "different questions should get different answers"


def test_results_come_back_in_input_order(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    prompts = [chat(q) for q in QUESTIONS]
    forward = generate(model, tokenizer, prompts, max_new_tokens=16, batch_size=3)
    backward = generate(model, tokenizer, prompts[::-1], max_new_tokens=16, batch_size=3)
    assert backward == forward[::-1]


def test_chat_prompt_goes_through_the_chat_template(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    text = render(tokenizer, chat("What is 2 + 3?"))
    assert text == "<|user|>\nWhat is 2 + 3?<|end|>\n<|assistant|>\n"
    as_chat = generate(model, tokenizer, [chat("What is 2 + 3?")], max_new_tokens=16)
    as_text = generate(model, tokenizer, [text], max_new_tokens=16)
    assert as_chat == as_text


def test_answers_end_with_eos_before_the_limit(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    [done] = generate_completions(model, tokenizer, [chat("What is 2 + 3?")], max_new_tokens=64)
    assert done.finish == "eos", done
    assert 1 < done.tokens < 64
    assert "<|end|>" not in done.text and "####" in done.text


def test_stop_strings_cut_the_output(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    prompts = [chat(q) for q in QUESTIONS[:3]]
    full = generate(model, tokenizer, prompts, max_new_tokens=32)
    marker = full[0][3:6]
    assert marker, full
    cut = generate_completions(model, tokenizer, prompts, max_new_tokens=32, stop=[marker])
    assert cut[0].text == full[0][: full[0].find(marker)]
    assert cut[0].finish == "stop"
    for text, original in zip((c.text for c in cut), full, strict=True):
        assert marker not in text
        assert original.startswith(text)


def test_cut_at_stop_takes_the_earliest_marker() -> None:
    assert cut_at_stop("a + b = c\n####", ["####", "="]) == ("a + b ", True)
    assert cut_at_stop("abc", ["x", ""]) == ("abc", False)


def test_progress_is_reported_per_batch(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    calls: list[tuple[int, int]] = []
    generate(
        model,
        tokenizer,
        [chat(q) for q in QUESTIONS[:5]],
        max_new_tokens=4,
        batch_size=2,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert calls == [(2, 5), (4, 5), (5, 5)]


def test_sampling_is_seeded(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    prompts = [chat(q) for q in QUESTIONS[:3]]
    first = generate(model, tokenizer, prompts, max_new_tokens=24, temperature=1.5, seed=7)
    again = generate(model, tokenizer, prompts, max_new_tokens=24, temperature=1.5, seed=7)
    greedy = generate(model, tokenizer, prompts, max_new_tokens=24)
    assert first == again
    assert first != greedy


def test_bad_prompts_and_settings_get_precise_errors(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    with pytest.raises(ValueError, match=r"list of chat messages"):
        generate(model, tokenizer, [[{"text": "hi"}]], max_new_tokens=4)  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"max_new_tokens"):
        generate(model, tokenizer, ["hi"], max_new_tokens=0)
    with pytest.raises(ValueError, match=r"prompt 1 is empty"):
        generate(model, tokenizer, ["hi", ""], max_new_tokens=4)
    assert generate(model, tokenizer, [], max_new_tokens=4) == []


def test_a_model_directory_is_served_by_a_generator(tiny_dir: Path, tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    prompts = [chat(q) for q in QUESTIONS[:2]]
    expected = generate(model, tokenizer, prompts, max_new_tokens=12)
    generator = Generator(tiny_dir, device="cpu")
    assert generator.backend == "transformers"  # no GPU here, or no vLLM
    assert generator.generate(prompts, max_new_tokens=12) == expected
    assert generate(str(tiny_dir), None, prompts, max_new_tokens=12) == expected


def test_backend_can_be_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTORL_GENERATION_BACKEND", "transformers")
    assert pick_backend("cuda") == "transformers"
    monkeypatch.setenv("AUTORL_GENERATION_BACKEND", "tpu")
    with pytest.raises(ValueError, match=r"auto, transformers, vllm, vllm-cpu"):
        pick_backend()


def test_right_padding_tokenizers_still_batch_correctly(tiny_dir: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(tiny_dir)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_dir))
    tokenizer.padding_side = "right"
    prompts = [chat(q) for q in QUESTIONS]
    batched = generate(model, tokenizer, prompts, max_new_tokens=16, batch_size=6)
    assert batched == generate_one_by_one(model, tokenizer, prompts, max_new_tokens=16)


def test_the_engines_cut_rows_end_where_the_transformers_path_stops(
    tiny: tuple[Any, Any],
) -> None:
    """An engine given only some of the stop strings generates on past the others; the
    backend's :func:`finish_row` cuts the row where the transformers path's stopping criterion
    ended it: the same text, token count and finish reason, whichever stop, EOS or the token
    limit came first. Stops are taken from the tiny model's own greedy outputs, so they hit
    at different points; one prompt at a time (batch padding adds a known token count skew)."""
    from autorl_hf.engine.backend import finish_row
    from autorl_hf.generation import eos_ids, render

    model, tokenizer = tiny
    prompts = [chat(q) for q in QUESTIONS]
    eos = eos_ids(model, tokenizer)
    rows = []
    for prompt in prompts:  # the engine's rows: greedy, no stop strings, to the token limit
        ids = tokenizer(render(tokenizer, prompt), return_tensors="pt", add_special_tokens=False)
        out = model.generate(**ids, max_new_tokens=32, do_sample=False)
        rows.append(out[0, ids["input_ids"].shape[1] :].tolist())
    texts = [tokenizer.decode(r, skip_special_tokens=True) for r in rows]
    stops = sorted({t[len(t) // 2 : len(t) // 2 + 3] for t in texts if len(t) > 8})[:5]
    stops.append("never in any output \x00")
    want = generate_completions(
        model, tokenizer, prompts, max_new_tokens=32, batch_size=1, stop=stops
    )
    got = [
        finish_row(tokenizer, eos, row, stops, cut_row=True, stopped_by_engine=False)
        for row in rows
    ]
    assert got == want
    assert {c.finish for c in want} >= {"stop"}, want  # the stops did end rows
    assert any(c.tokens < len(r) for c, r in zip(got, rows, strict=True))  # and cut them
