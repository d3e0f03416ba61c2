"""From what was typed to what is asked: a follow-up made self-contained, its kind, filters and asks (`Question`)."""
