"""Migration 5: stored embeddings for the dense retrieval channel."""

DENSE_SQL = """
SELECT 1;
"""
