"""The run engine: builds a run directory, grades submissions, supervises the agent."""
