"""Text: the one tokenizer shared by every index and query (terms) and date normalisation (dates); no storage."""
