"""Real parts for the gateway tests and benchmarks: a stub OpenAI-compatible upstream and a loop thread."""
