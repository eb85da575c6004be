"""autorl's LLM layer: the driver interface and its helpers (retries, call logs, cassettes,
pricing, the providers' wire formats), the metering gateway that serves a run's driver to its
agent, and a fake provider for tests (:mod:`autorl_llm.testing`)."""
