"""The acceptance gate: every kernel candidate is judged here, whoever proposed it."""
