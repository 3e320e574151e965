"""Imports every module of the Memory page that registers routes (``@method(..., http=...)``), and the dispatcher."""

from stratagate.page import (  # noqa: F401  (each module registers its routes when imported)
    audit_view,
    dispatch,
    evidence_view,
    graph_view,
    imports_view,
    longterm,
)
