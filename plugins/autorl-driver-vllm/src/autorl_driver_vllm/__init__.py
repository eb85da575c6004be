"""autorl driver backend ``vllm`` (an OpenAI-compatible vLLM server, given or started)."""
