"""The DeepSeek Harness (DSH) adapter: what the JS shim used to decide, decided here from DSH's raw payloads.

``events.py`` (raw ``session/event`` envelopes and content blocks), ``fold.py`` (one turn's events → the
``turn.capture`` params), ``query.py`` (the recall query of a model step), ``session.py`` (a session's namespace
with its fallback), ``status.py`` (the status the Settings page shows), ``prompt.py`` (the system-prompt section).
The RPC handlers that use them are ``rpc/dsh.py``.
"""
