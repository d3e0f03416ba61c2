"""The text every stage reads the same way: content stems, numbers, names, a source's sentences, a paper's name."""
