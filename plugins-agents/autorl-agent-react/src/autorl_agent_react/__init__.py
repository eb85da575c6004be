"""The ``react`` agent: a small tool-using loop over the harness's LLM gateway."""
