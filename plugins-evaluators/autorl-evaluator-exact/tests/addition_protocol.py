"""An 'answer' contract for tests: the gsm8k extraction, the bare question as the prompt.

The tiny test model was trained on "What is a + b?" chats, so it answers with numbers here.
"""

from autorl_task_gsm8k.kit import extract_answer, has_final_answer_line, normalize


def build_messages(question: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": question}]


__all__ = ["build_messages", "extract_answer", "has_final_answer_line", "normalize"]
