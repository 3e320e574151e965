"""Imports every module of the Memory page that registers routes (``@method(..., http=...)``), and the dispatcher."""

from stratagate.page import dispatch  # noqa: F401
