"""Build the shipped `tiny` model: a ~1.4 M-parameter Qwen2 with its own BPE tokenizer.

Deterministic (fixed seeds, one torch thread): re-running it on the same torch version rewrites
the same weights. It trains for about two minutes on GSM8K-style problems (reasoning-gym's
gsm_symbolic, chain of thought ending in "#### N") and "What is a + b?" questions in its chat
format, so it emits well-formed chat answers ending in its end-of-turn token. It exists for
fast, real tests (load, generate, SFT, LoRA, merge, evaluate), not for scores.

    .venv/bin/python plugins/autorl-model-tiny/scripts/build_tiny.py [--epochs N] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "src" / "autorl_model_tiny" / "weights"
PAD, END, UNK = "<|pad|>", "<|end|>", "<|unk|>"
ROLE_TOKENS = ["<|system|>", "<|user|>", "<|assistant|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}<|end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
MAX_TOKENS = 384
"""Longer training texts are dropped, not truncated: every text must end in <|end|>."""
BLOCK = 256
THREADS = 2
"""Fixed (not the core count) so the same torch build gives the same weights everywhere."""


def chats(seed: int, n_gsm: int, n_add: int) -> list[list[dict[str, str]]]:
    """GSM8K-style problems with their chain of thought, plus one- and two-digit additions."""
    import reasoning_gym

    rng = random.Random(seed)
    out = []
    for item in reasoning_gym.create_dataset("gsm_symbolic", size=n_gsm, seed=seed):
        cot = item["metadata"].get("answer_cot") or ""
        if "####" not in cot:
            cot = f"{cot.strip()}\n#### {item['answer']}".strip()
        out.append(
            [{"role": "user", "content": item["question"]}, {"role": "assistant", "content": cot}]
        )
    for i in range(n_add):
        high = 9 if i % 2 == 0 else 99
        a, b = rng.randint(0, high), rng.randint(0, high)
        out.append(
            [
                {"role": "user", "content": f"What is {a} + {b}?"},
                {"role": "assistant", "content": f"{a} + {b} = {a + b}\n#### {a + b}"},
            ]
        )
    rng.shuffle(out)
    return out


def render(chat: list[dict[str, str]]) -> str:
    """The chat template, written out (the tokenizer does not exist yet when we need it)."""
    return "".join(f"<|{m['role']}|>\n{m['content']}{END}\n" for m in chat)


def build_tokenizer(texts: list[str], vocab_size: int) -> Any:
    """Byte-level BPE that splits digits into single tokens (arithmetic stays learnable)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, END, UNK, *ROLE_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token=PAD,
        eos_token=END,
        unk_token=UNK,  # explicit, else AutoTokenizer (Qwen2Tokenizer) adds a 1025th token
        model_max_length=1024,
    )
    fast.add_special_tokens({"additional_special_tokens": ROLE_TOKENS})
    fast.chat_template = CHAT_TEMPLATE
    return fast


def check_round_trip(tokenizer: Any) -> Any:
    """What AutoTokenizer will see after save/load (it may add default special tokens)."""
    import tempfile

    from transformers import AutoTokenizer, Qwen2Config

    with tempfile.TemporaryDirectory() as tmp:
        tokenizer.save_pretrained(tmp)
        Qwen2Config().save_pretrained(tmp)
        return AutoTokenizer.from_pretrained(tmp)


def pack(ids: list[list[int]], block: int, seed: int) -> list[list[int]]:
    """Concatenate shuffled texts into one stream cut in fixed blocks: no compute on padding."""
    order = list(range(len(ids)))
    random.Random(seed).shuffle(order)
    stream = [token for i in order for token in ids[i]]
    return [stream[i : i + block] for i in range(0, len(stream) - block + 1, block)]


def train(model: Any, blocks: list[list[int]], epochs: int, seed: int) -> None:
    """AdamW + one-cycle schedule over packed blocks, batches of 16, loss on every token."""
    import torch

    data = torch.tensor(blocks)
    steps = epochs * (len(blocks) // 16)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=steps)
    generator = torch.Generator().manual_seed(seed)
    model.train()
    started = time.time()
    step = 0
    for _ in range(epochs):
        perm = torch.randperm(len(data), generator=generator)
        for start in range(0, len(perm) - 15, 16):
            batch = data[perm[start : start + 16]]
            loss = model(input_ids=batch, labels=batch).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            if step % 25 == 0 or step == steps - 1:
                elapsed = time.time() - started
                print(f"step {step:4d}/{steps}  loss {loss.item():.3f}  ({elapsed:.0f} s)")
            step += 1
    model.eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--gsm", type=int, default=2000, help="gsm_symbolic problems")
    parser.add_argument("--additions", type=int, default=12000, help="a + b questions")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()

    import torch
    import transformers
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(args.seed)
    torch.set_num_threads(THREADS)
    texts = [render(c) for c in chats(args.seed, n_gsm=args.gsm, n_add=args.additions)]
    tokenizer = build_tokenizer(texts, vocab_size=1024)
    ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
    ids = [x for x in ids if len(x) <= MAX_TOKENS]
    print(f"training texts: {len(ids)} (of {len(texts)}; longer than {MAX_TOKENS} dropped)")
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=160,
        intermediate_size=480,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = Qwen2ForCausalLM(config)
    reloaded = check_round_trip(tokenizer)
    assert len(reloaded) == config.vocab_size, (len(reloaded), config.vocab_size)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"parameters: {n_params:,}")
    started = time.time()
    blocks = pack(ids, BLOCK, args.seed)
    print(f"{len(blocks)} blocks of {BLOCK} tokens")
    train(model, blocks, args.epochs, args.seed)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = None
    if args.out.exists():
        shutil.rmtree(args.out)
    model.save_pretrained(args.out, safe_serialization=True)
    tokenizer.save_pretrained(args.out)
    build = {
        "script": "plugins/autorl-model-tiny/scripts/build_tiny.py",
        "epochs": args.epochs,
        "gsm_symbolic": args.gsm,
        "additions": args.additions,
        "blocks": len(blocks),
        "seed": args.seed,
        "parameters": n_params,
        "train_seconds": round(time.time() - started, 1),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    (args.out / "BUILD.json").write_text(json.dumps(build, indent=2) + "\n")
    print(f"saved to {args.out}")


if __name__ == "__main__":
    main()
