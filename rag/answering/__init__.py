"""From sources to a cited answer: evidence sentences, prompts, the model providers, citation checking."""
