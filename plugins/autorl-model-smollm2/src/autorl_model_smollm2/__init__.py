"""SmolLM2-135M-Instruct for autorl, converted once from its GGUF into a safetensors directory."""
