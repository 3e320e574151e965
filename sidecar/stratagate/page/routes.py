"""Imports every module of the Memory page that registers routes (``@method(..., http=...)``), and the dispatcher."""

from stratagate.page import (  # noqa: F401  (every module that registers routes: keep all)
    admin,
    dispatch,
    review,
    settings_view,
    undo,
)
