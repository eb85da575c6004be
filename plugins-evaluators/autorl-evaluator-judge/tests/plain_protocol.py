"""A protocol module for tests: the instruction alone as the user message (AlpacaEval's prompt),
without depending on the task package."""


def build_messages(instruction: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": instruction}]
