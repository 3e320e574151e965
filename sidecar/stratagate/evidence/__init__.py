"""The evidence gate: retrieval batches, memory_assess, use receipts (memory_record_use) and long-term weights."""
