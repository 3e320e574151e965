"""StrataGate-Py sidecar: durable capture, sealed blocks, jobs and recall for DeepSeek Harness."""

__version__ = "0.1.0"
