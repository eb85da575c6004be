"""autorl agent ``openhands``: OpenHands CLI 1.16.0 headless (Python 3.12 venv)
through the run's LLM gateway."""
