"""`rag eval`: how well questions are answered, measured on the labelled sets of tests/eval/ (questions.py: look-ups
and their answers; counts.py: counts over the metadata; related.py: related papers; themes.py: overviews)."""
