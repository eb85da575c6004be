"""Batched generation: the one path every evaluator uses.

Prompts are sorted by length so each batch pads little, generated together, and returned in the
caller's order. Chat-message prompts go through the tokenizer's chat template. On a machine with
a CUDA GPU and vLLM installed, :func:`generate_vllm` serves the same call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Prompt = str | list[dict[str, str]]


def render(tokenizer: Any, prompt: Prompt) -> str:
    """A chat prompt through the chat template (with the generation prompt); text as is."""
    if isinstance(prompt, str):
        return prompt
    return tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)


def cut_at_stop(text: str, stop: Sequence[str]) -> str:
    cut = len(text)
    for marker in stop:
        index = text.find(marker)
        if index != -1:
            cut = min(cut, index)
    return text[:cut]


def generate(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[Prompt],
    *,
    max_new_tokens: int,
    batch_size: int = 32,
    temperature: float = 0.0,
    stop: Sequence[str] = (),
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> list[str]:
    """Generate one completion per prompt; greedy when ``temperature`` is 0."""
    import torch

    texts = [render(tokenizer, p) for p in prompts]
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
    outputs: list[str] = [""] * len(texts)
    device = next(model.parameters()).device
    torch.manual_seed(seed)
    sampling = temperature > 0
    done = 0
    for start in range(0, len(order), max(1, batch_size)):
        batch = order[start : start + batch_size]
        encoded = tokenizer(
            [texts[i] for i in batch],
            return_tensors="pt",
            padding=True,
            add_special_tokens=False,
        ).to(device)
        with torch.inference_mode():
            generated = model.generate(
                **encoded,
                max_new_tokens=max_new_tokens,
                do_sample=sampling,
                temperature=temperature if sampling else None,
                top_p=None,
                top_k=None,
                pad_token_id=tokenizer.pad_token_id,
            )
        new_tokens = generated[:, encoded["input_ids"].shape[1] :]
        decoded = tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        for index, text in zip(batch, decoded, strict=True):
            outputs[index] = cut_at_stop(text, stop)
        done += len(batch)
        if progress is not None:
            progress(done, len(texts))
    return outputs


def vllm_available() -> bool:
    """True when vLLM can serve generation here: it imports and a CUDA GPU is present."""
    try:
        import torch

        if not torch.cuda.is_available():
            return False
        import vllm  # noqa: F401
    except ImportError:
        return False
    return True


def generate_vllm(
    model_dir: str | Path,
    prompts: Sequence[Prompt],
    *,
    max_new_tokens: int,
    temperature: float = 0.0,
    stop: Sequence[str] = (),
    seed: int = 0,
) -> list[str]:
    """The same contract as :func:`generate`, served by vLLM (GPU only)."""
    from vllm import LLM, SamplingParams

    llm = LLM(model=str(model_dir), seed=seed, enforce_eager=True, gpu_memory_utilization=0.5)
    tokenizer = llm.get_tokenizer()
    texts = [render(tokenizer, p) for p in prompts]
    params = SamplingParams(
        max_tokens=max_new_tokens, temperature=temperature, stop=list(stop) or None, seed=seed
    )
    results = llm.generate(texts, params)
    return [r.outputs[0].text for r in results]


def generate_from_dir(
    model_dir: str | Path,
    prompts: Sequence[Prompt],
    *,
    max_new_tokens: int,
    batch_size: int = 32,
    temperature: float = 0.0,
    stop: Sequence[str] = (),
    seed: int = 0,
    device: str = "auto",
    progress: Callable[[int, int], None] | None = None,
) -> list[str]:
    """Load ``model_dir`` and generate: vLLM on a GPU when available, else transformers."""
    from autorl_hf.loading import load_model, pick_device

    if pick_device(device).startswith("cuda") and vllm_available():
        out = generate_vllm(
            model_dir,
            prompts,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            stop=stop,
            seed=seed,
        )
        if progress is not None:
            progress(len(out), len(out))
        return out
    model, tokenizer = load_model(model_dir, device=device)
    return generate(
        model,
        tokenizer,
        prompts,
        max_new_tokens=max_new_tokens,
        batch_size=batch_size,
        temperature=temperature,
        stop=stop,
        seed=seed,
        progress=progress,
    )
