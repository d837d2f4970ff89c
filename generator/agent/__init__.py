"""The Claude proposer: an evaluator-optimizer loop over the official `anthropic` SDK.

config     the model table and limits (models.toml), usage and its price
budget     the run's budget, reserved per request before it is sent (holds with any --jobs)
client     one streamed Messages request, behind a small protocol tests can fake; how it broke
requester  one question: its budget, and a stream that broke sent again, a bounded number of times
batches    Message Batches: rounds of questions as batches, the ledger that lets a killed run take them up again
conversation  the prompt, the answer's body (fenced block or submit tool), feedback, summaries
session    one op's attempts: stop conditions, transcript, the cache of accepted bodies
transcript the JSONL record of a session, and reading an accepted body back from it (replay)
"""
