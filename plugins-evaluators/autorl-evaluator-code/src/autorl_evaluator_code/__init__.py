"""The `code` evaluator: generate code with the model, run it against tests in a sandbox."""
