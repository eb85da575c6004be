"""Asking the judge: one driver (behind an optional cassette and a call log), the disk cache, and
the account of calls, tokens and cost that ends up in the evaluation's metrics."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl_llm.drivers import ChatRequest, ChatResponse, open_driver, parse_driver_name
from autorl_llm.drivers.errors import DriverError

from autorl.errors import AutorlError
from autorl.paths import cache_dir
from autorl_evaluator_judge.cache import JudgeCache, NoCache, prompt_key


class JudgeError(AutorlError):
    """The judge could not answer (after the driver's retries); judgments so far are cached."""


@dataclass(frozen=True)
class Verdict:
    text: str
    cached: bool
    replayed: bool
    scripted: bool


class Judge:
    """``ask(request)`` returns the judge's answer, from the cache when it was judged before."""

    def __init__(self, cfg: dict[str, Any], work_dir: Path) -> None:
        self.name: str = cfg["judge"]
        backend, _ = parse_driver_name(self.name)
        self.backend = backend
        options = dict(cfg["judge_options"])
        if backend == "scripted" and cfg.get("scripts_dir") and "base_dir" not in options:
            options["base_dir"] = str(cfg["scripts_dir"])
        self.calls_log = Path(work_dir) / "judge_calls.jsonl"
        self.driver = open_driver(
            self.name,
            cassette=cfg["cassette"],
            cassette_mode=cfg["cassette_mode"],
            call_log=self.calls_log,
            **options,
        )
        if cfg["cache"]:
            directory = Path(cfg["cache_dir"]) if cfg["cache_dir"] else cache_dir("judge")
            self.cache: JudgeCache | NoCache = JudgeCache(directory, self.name)
        else:
            self.cache = NoCache()
        self.stream = bool(cfg["stream"])
        self.max_tokens = int(cfg["judge_max_tokens"])
        temperature = cfg["judge_temperature"]
        self.temperature = None if temperature is None else float(temperature)
        self._lock = threading.Lock()
        self.totals = {
            "judge_calls": 0,
            "judge_cached": 0,
            "judge_replayed": 0,
            "judge_input_tokens": 0,
            "judge_output_tokens": 0,
            "judge_cost_usd": 0.0,
            "judge_cost_usd_all": 0.0,
        }
        self.scripted = backend == "scripted"

    def request(self, messages: list[dict[str, Any]], example_id: str) -> ChatRequest:
        return ChatRequest.from_messages(
            messages,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            metadata={"purpose": "judge", "example": example_id},
        )

    def _call(self, request: ChatRequest) -> ChatResponse:
        if not self.stream:
            return self.driver.chat(request)
        final = None
        for chunk in self.driver.stream(request):
            if chunk.response is not None:
                final = chunk.response
        if final is None:
            raise DriverError(f"{self.name}: the stream ended without a final answer")
        return final

    def ask(self, request: ChatRequest) -> Verdict:
        key = prompt_key(self.name, request)
        hit = self.cache.get(key)
        if hit is not None:
            with self._lock:
                self.totals["judge_cached"] += 1
                self.totals["judge_cost_usd_all"] += float(hit.get("cost_usd") or 0.0)
                self.scripted = self.scripted or bool(hit.get("scripted"))
            return Verdict(hit["text"], cached=True, replayed=False, scripted=bool(hit["scripted"]))
        response = self._call(request)
        self.cache.put(
            key,
            {
                "judge": self.name,
                "text": response.text,
                "usage": response.usage.to_dict(),
                "cost_usd": response.cost_usd,
                "scripted": response.scripted,
            },
        )
        with self._lock:
            t = self.totals
            t["judge_calls"] += 1
            t["judge_cost_usd_all"] += response.cost_usd
            if response.replayed:
                t["judge_replayed"] += 1
            else:
                t["judge_input_tokens"] += response.usage.input_tokens
                t["judge_output_tokens"] += response.usage.output_tokens
                t["judge_cost_usd"] += response.cost_usd
            self.scripted = self.scripted or response.scripted
        return Verdict(
            response.text, cached=False, replayed=response.replayed, scripted=response.scripted
        )

    def metrics(self) -> dict[str, Any]:
        out: dict[str, Any] = {"judge": self.name, "judge_scripted": self.scripted}
        out.update(self.totals)
        out["judge_cost_usd"] = round(out["judge_cost_usd"], 6)
        out["judge_cost_usd_all"] = round(out["judge_cost_usd_all"], 6)
        return out
