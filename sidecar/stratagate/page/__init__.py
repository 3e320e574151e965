"""The Memory page: the JSON routes behind DSH Settings → "StrataGate Memory" and the standalone ``stratagate ui``.

Every route is a protocol-table method with an ``http`` binding (``@method(..., http="GET /events")``);
``page.request`` (dispatch.py) turns an HTTP request into that method's params and its reply into a status and a JSON
body. The shim forwards ``/api/stratagate/memory/*`` to ``page.request`` unchanged; the standalone server (server.py)
calls the same dispatcher. The browser code the page runs is in ``static/`` (served by the same dispatcher)."""
