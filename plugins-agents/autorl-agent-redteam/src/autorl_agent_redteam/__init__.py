"""The ``redteam`` agent: a security self-test that attacks the harness from inside the sandbox."""
