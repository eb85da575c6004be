"""What the gateway does per call, without HTTP: budget check, driver call, charge, log.

Kept apart from the FastAPI app so the metering rules are plain Python, and so the call log and
the budget see exactly one record per call whether the client streamed or not.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from autorl_llm.drivers.calllog import DriverCallLog
from autorl_llm.drivers.errors import DriverError
from autorl_llm.drivers.pricing import cost_usd
from autorl_llm.drivers.types import ChatResponse, Usage
from autorl_llm.drivers.usage import estimate_tokens
from autorl_llm.drivers.wire.parse import ParsedRequest
from autorl_llm.drivers.wire.render import Piece, WireCall, WireReply
from autorl_llm.gateway.budget import DriverBudget
from autorl_llm.gateway.callids import CallIds
from autorl_llm.gateway.health import UpstreamHealth


class BudgetRefused(DriverError):
    """The run's driver budget is spent: the agent gets this message in its API's error format."""


def to_wire(response: ChatResponse, client_model: str) -> WireReply:
    """A driver answer as the renderers' reply; the model name echoes what the client asked."""
    finish = response.finish_reason if response.finish_reason in ("length", "tool_calls") else None
    return WireReply(
        text=response.text,
        tool_calls=tuple(WireCall(c.id, c.name, c.arguments) for c in response.tool_calls),
        finish_reason=finish or ("tool_calls" if response.tool_calls else "stop"),
        input_tokens=response.usage.input_tokens,
        output_tokens=response.usage.output_tokens,
        model=client_model,
    )


class GatewayService:
    """One driver, one budget, one call log, one health record: shared by a run's requests."""

    def __init__(
        self,
        driver: Any,
        budget: DriverBudget,
        log: DriverCallLog,
        health: UpstreamHealth | None = None,
    ) -> None:
        self.driver = driver
        self.backend = driver.name
        self.model = driver.model
        self.budget = budget
        self.log = log
        self.health = health or UpstreamHealth()
        self.ids = CallIds()

    def _admit(self, parsed: ParsedRequest) -> None:
        message = self.budget.refusal()
        if message is not None:
            error = BudgetRefused(message)
            self._log(parsed, error=error, elapsed=0.0, refused=True)
            raise error

    def _log(
        self,
        parsed: ParsedRequest,
        *,
        response: ChatResponse | None = None,
        error: BaseException | None = None,
        elapsed: float | None = None,
        refused: bool = False,
    ) -> None:
        request = parsed.request
        if parsed.dropped:
            request.metadata["dropped"] = list(parsed.dropped)
        self.log.log_call(
            backend=self.backend,
            model=self.model,
            request=request,
            response=response,
            error=error,
            streamed=parsed.stream,
            elapsed_s=elapsed,
            refused=refused,
        )
        if response is not None:
            self.health.succeeded(response.attempts, response.latency_s)
        elif error is not None and not refused:
            self.health.failed_call(error, elapsed or 0.0)

    def _upstream_view(self, parsed: ParsedRequest) -> ParsedRequest:
        """The request as the upstream should see it: its own tool-call ids (see callids)."""
        request = self.ids.to_upstream(parsed.request)
        return parsed if request is parsed.request else replace(parsed, request=request)

    def chat(self, parsed: ParsedRequest) -> WireReply:
        self._admit(parsed)
        parsed = self._upstream_view(parsed)
        started = time.monotonic()
        try:
            response = self.driver.chat(parsed.request)
        except Exception as exc:
            self._log(parsed, error=exc, elapsed=time.monotonic() - started)
            raise
        self._log(parsed, response=response)
        self.budget.charge(response)
        return to_wire(self.ids.to_client(response), parsed.model)

    def stream(self, parsed: ParsedRequest) -> Iterator[Piece]:
        """Text pieces as the driver sends them, then the final reply (charged and logged)."""
        self._admit(parsed)
        parsed = self._upstream_view(parsed)
        started = time.monotonic()
        sent: list[str] = []
        final: ChatResponse | None = None
        try:
            for chunk in self.driver.stream(parsed.request):
                if chunk.text:
                    sent.append(chunk.text)
                    yield chunk.text
                if chunk.response is not None:
                    final = chunk.response
                    break
        except GeneratorExit:
            self._charge_abandoned(parsed, "".join(sent), time.monotonic() - started)
            raise
        except Exception as exc:
            self._log(parsed, error=exc, elapsed=time.monotonic() - started)
            raise
        if final is None:
            error = DriverError(f"{self.backend}/{self.model}: the stream ended without an answer")
            self._log(parsed, error=error, elapsed=time.monotonic() - started)
            raise error
        self._log(parsed, response=final)
        self.budget.charge(final)
        yield to_wire(self.ids.to_client(final), parsed.model)

    def _charge_abandoned(self, parsed: ParsedRequest, text: str, elapsed: float) -> None:
        """The client hung up mid-stream: the upstream tokens are spent all the same, so charge
        an estimate (prompt + text sent so far); otherwise aborting streams would be free."""
        usage = Usage(estimate_tokens(parsed.request.all_text()), estimate_tokens(text))
        response = ChatResponse(
            text=text,
            model=self.model,
            backend=self.backend,
            usage=usage,
            finish_reason="error",
            cost_usd=cost_usd(self.model, usage, getattr(self.driver, "prices", None)),
            latency_s=round(elapsed, 4),
            scripted=self.backend == "scripted",
            raw={"client_disconnected": True, "usage_estimated": True},
        )
        parsed.request.metadata["client_disconnected"] = True
        self._log(parsed, response=response)
        self.budget.charge(response)
