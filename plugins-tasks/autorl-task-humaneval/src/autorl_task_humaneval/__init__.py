"""HumanEval task for autorl: 82 train / 82 held-out problems, pass@1 by sandboxed execution."""
