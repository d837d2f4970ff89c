"""The Claude proposer: an evaluator-optimizer loop over the official `anthropic` SDK.

config     the model table and limits (models.toml), usage and its price, the run's budget
client     one streamed Messages request with retries, behind a small protocol tests can fake
conversation  the prompt, the answer's body (fenced block or submit tool), feedback, summaries
session    one op's attempts: stop conditions, transcript, the cache of accepted bodies
transcript the JSONL record of a session, and reading an accepted body back from it (replay)
"""
