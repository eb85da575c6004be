"""The ``scripted`` driver: deterministic answers from a script, marked ``scripted`` everywhere."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from autorl_llm.drivers import BaseDriver, ChatChunk, ChatRequest, ChatResponse, ToolCall, Usage
from autorl_llm.drivers.errors import DriverConfigError, DriverError
from autorl_llm.drivers.usage import estimate_tokens

from autorl_driver_scripted.script import Reply, Script, load_script, parse_script


class ScriptedDriver(BaseDriver):
    """``scripted/<path>``: rules on the last user message first, then ordered replies.

    Options: ``script`` (a mapping used instead of reading ``model`` as a path; ``model`` is
    then only a label) and ``base_dir`` (where relative script paths start; default: cwd).
    """

    name = "scripted"
    known_options = frozenset({"script", "base_dir"})

    def __init__(self, model: str, **options: Any) -> None:
        super().__init__(model, **options)
        if options.get("script") is not None:
            self.script: Script = parse_script(options["script"], f"(inline, {model})")
        else:
            path = Path(model).expanduser()
            if not path.is_absolute():
                path = Path(options.get("base_dir") or Path.cwd()) / path
            self.script = load_script(path)
        self._calls = 0
        self._lock = threading.Lock()

    # choosing the reply ------------------------------------------------------------------------

    def _ordered(self, index: int) -> Reply | None:
        replies = self.script.replies
        if not replies:
            return None
        if index < len(replies):
            return replies[index]
        if self.script.when_exhausted == "cycle":
            return replies[index % len(replies)]
        if self.script.when_exhausted == "repeat_last":
            return replies[-1]
        return None

    def pick(self, request: ChatRequest) -> Reply:
        """The reply a request gets (advances the call counter when replies_by is 'call')."""
        last_user = request.last_user_text()
        for rule in self.script.rules:
            if rule.pattern.search(last_user):
                return rule.reply
        if self.script.replies_by == "turn":
            index = sum(1 for m in request.messages if m["role"] == "assistant")
        else:
            with self._lock:
                index = self._calls
                self._calls += 1
        reply = self._ordered(index)
        if reply is None:
            reply = self.script.default
        if reply is None:
            shown = " ".join(last_user.split())[:80]
            raise DriverError(
                f"scripted/{self.model}: the script has no reply for call #{index + 1} "
                f"({len(self.script.replies)} ordered replies, no rule matched the last user "
                f"message {shown!r})",
                hint="add a rule or more replies, or set when_exhausted: repeat_last / cycle, "
                "or a default",
            )
        return reply

    # answering ---------------------------------------------------------------------------------

    def _send(self, request: ChatRequest, timeout_s: float) -> ChatResponse:
        reply = self.pick(request)
        offered = {t["function"]["name"] for t in request.tools or ()}
        calls = []
        for i, call in enumerate(reply.tool_calls):
            if offered and call.name not in offered:
                raise DriverConfigError(
                    f"scripted/{self.model}: the scripted reply calls tool {call.name!r}, which "
                    f"the request does not offer (it offers: {', '.join(sorted(offered))})",
                    hint="fix the tool name in the script",
                )
            # deterministic (a replayed script gives the same ids) and unique per conversation:
            # the turn (assistant messages so far) is part of the id
            turn = sum(1 for m in request.messages if m.get("role") == "assistant")
            calls.append(
                ToolCall(
                    id=f"call_{turn}_{i}_{call.name}", name=call.name, arguments=call.arguments
                )
            )
        text, finish = reply.text, reply.finish_reason
        if request.stop:
            cuts = [text.find(s) for s in request.stop if s in text]
            if cuts:
                text, finish = text[: min(cuts)], finish or "stop"
        if request.max_tokens is not None and estimate_tokens(text) > request.max_tokens:
            text, finish = text[: request.max_tokens * 4], "length"
            while text and estimate_tokens(text) > request.max_tokens:
                text = text.rsplit(None, 1)[0] if " " in text.strip() else text[:-1]
        if finish is None:
            finish = "tool_calls" if calls else "stop"
        out_text = text + "".join(f"{c.name}{c.arguments}" for c in calls)
        return ChatResponse(
            text=text,
            tool_calls=tuple(calls),
            finish_reason=finish,
            usage=Usage(estimate_tokens(request.all_text()), estimate_tokens(out_text)),
            model=self.model,
            backend=self.name,
            scripted=True,
            raw={"scripted": True, "script": self.script.source},
        )

    def _send_stream(self, request: ChatRequest, timeout_s: float) -> Iterator[ChatChunk]:
        """Word by word (whitespace kept), so streaming consumers see several pieces."""
        response = self._send(request, timeout_s)
        for piece in re.findall(r"\S+\s*|\s+", response.text):
            yield ChatChunk(text=piece)
        yield ChatChunk(response=response)
