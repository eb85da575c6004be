"""The shared retry policy: backoff, Retry-After, give-up messages, error classification."""

from __future__ import annotations

import random

import httpx
import pytest
from autorl_llm.drivers import RetryPolicy, TransientError
from autorl_llm.drivers.errors import (
    DriverAPIError,
    DriverConfigError,
    DriverTimeoutError,
    DriverUnavailableError,
)
from autorl_llm.drivers.retry import classify_exception, parse_retry_after


def failing(*errors: Exception):
    """A call that raises ``errors`` in turn, then returns 'ok'; counts its calls."""
    state = {"calls": 0}

    def call() -> str:
        state["calls"] += 1
        if state["calls"] <= len(errors):
            raise errors[state["calls"] - 1]
        return "ok"

    return call, state


def test_backoff_grows_with_jitter_and_is_capped() -> None:
    policy = RetryPolicy(initial_delay_s=1, multiplier=2, max_delay_s=5, jitter=0.25)
    rng = random.Random(0)
    delays = [policy.delay(a, rng=rng) for a in (1, 2, 3, 4, 5)]
    for got, base in zip(delays, [1, 2, 4, 5, 5], strict=True):
        assert 0.75 * base <= got <= 1.25 * base
    assert policy.delay(1, retry_after=7.0) == 7.0
    assert RetryPolicy(max_retry_after_s=3).delay(1, retry_after=100) == 3


def test_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480) == 10
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


def test_retries_transient_errors_then_succeeds_and_sleeps_retry_after() -> None:
    sleeps: list[float] = []
    call, state = failing(
        TransientError("rate_limit", "HTTP 429", status=429, retry_after=0.5),
        TransientError("server", "HTTP 500"),
    )
    retried: list[tuple[int, str, float]] = []
    policy = RetryPolicy(max_attempts=3, initial_delay_s=0.1, jitter=0)
    result, attempts = policy.run(
        call,
        what="x/y",
        sleep=sleeps.append,
        on_retry=lambda n, err, pause: retried.append((n, err.kind, pause)),
    )
    assert (result, attempts, state["calls"]) == ("ok", 3, 3)
    assert sleeps == [0.5, 0.2]
    assert retried == [(1, "rate_limit", 0.5), (2, "server", 0.2)]


def test_gives_up_with_the_last_error_and_attempt_count() -> None:
    call, state = failing(*[TransientError("server", "HTTP 503: overloaded")] * 5)
    with pytest.raises(DriverUnavailableError) as err:
        RetryPolicy(max_attempts=3, jitter=0).run(call, what="openai/gpt-5.2", sleep=lambda s: None)
    assert "openai/gpt-5.2: gave up after 3 attempts; last error: HTTP 503: overloaded" in str(
        err.value
    )
    assert state["calls"] == 3


def test_timeouts_can_fail_fast() -> None:
    call, state = failing(httpx.ReadTimeout("slow"), httpx.ReadTimeout("slow"))
    policy = RetryPolicy(max_attempts=3, timeout_s=0.5, retry_on_timeout=False)
    with pytest.raises(DriverTimeoutError, match=r"x/y: no answer within 0.5 s \(1 attempt\)"):
        policy.run(call, what="x/y", sleep=lambda s: None)
    assert state["calls"] == 1


def test_permanent_http_errors_are_not_retried() -> None:
    response = httpx.Response(
        401, text='{"error": "bad key"}', request=httpx.Request("POST", "http://x")
    )
    call, state = failing(httpx.HTTPStatusError("401", request=response.request, response=response))
    with pytest.raises(DriverAPIError) as err:
        RetryPolicy().run(call, what="gemini/g", sleep=lambda s: None)
    assert err.value.status == 401 and "HTTP 401" in str(err.value) and "API key" in str(err.value)
    assert state["calls"] == 1


def test_classification_by_duck_typing() -> None:
    class FakeSDKStatusError(Exception):  # the shape openai/anthropic errors have
        status_code = 429
        response = httpx.Response(429, headers={"retry-after": "3"}, text="slow down")

    mapped = classify_exception(FakeSDKStatusError(), "w")
    assert isinstance(mapped, TransientError) and mapped.retry_after == 3.0
    assert classify_exception(httpx.ConnectError("refused"), "w").kind == "connection"
    assert classify_exception(ValueError("bug"), "w") is None


def test_unknown_errors_propagate_untouched() -> None:
    call, _ = failing(KeyError("bug"))
    with pytest.raises(KeyError):
        RetryPolicy().run(call, what="w")


def test_invalid_policy_options_are_reported_with_the_driver() -> None:
    with pytest.raises(DriverConfigError, match="openai/x: invalid retry policy: max_attempts=0"):
        RetryPolicy.from_options({"max_attempts": 0}, "openai/x")
