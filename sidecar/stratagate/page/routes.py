"""Imports every module of the Memory page that registers routes (``@method(..., http=...)``), and the dispatcher."""

from stratagate.page import admin as _admin  # noqa: F401
from stratagate.page import audit_view as _audit_view  # noqa: F401
from stratagate.page import dispatch  # noqa: F401
from stratagate.page import evidence_view as _evidence_view  # noqa: F401
from stratagate.page import export as _export  # noqa: F401
from stratagate.page import graph_view as _graph_view  # noqa: F401
from stratagate.page import imports_view as _imports_view  # noqa: F401
from stratagate.page import live as _live  # noqa: F401
from stratagate.page import longterm as _longterm  # noqa: F401
from stratagate.page import overview as _overview  # noqa: F401
from stratagate.page import recent as _recent  # noqa: F401
from stratagate.page import review as _review  # noqa: F401
from stratagate.page import settings_view as _settings_view  # noqa: F401
from stratagate.page import undo as _undo  # noqa: F401
