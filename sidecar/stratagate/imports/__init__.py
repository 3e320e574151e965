"""Importing memories exported from other assistants (Mem0, ChatGPT, Markdown/text notes, dsh-memory-connect)."""
