"""End-to-end tests against the real DeepSeek Harness (a package, so its conftest never shadows tests/conftest.py)."""
