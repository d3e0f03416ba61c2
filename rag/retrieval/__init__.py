"""From a question to ranked sources: dense and lexical candidates, fusion, the post-fusion stages."""
