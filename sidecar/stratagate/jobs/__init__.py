"""Persisted background jobs: attempts, capped exponential backoff, no head-of-line blocking."""
