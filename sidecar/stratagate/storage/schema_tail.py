"""Migration 12: open tails. ``turns_unsealed`` holds only turns not yet in a block (a few per live session), so
the idle sweep (blocks/tail.py) finds sessions whose open turns went idle without reading the rest of ``turns``.
"""

TAIL_SQL = """
-- block_id is in the index (always NULL there) so the sweep reads the index alone (a covering index).
CREATE INDEX turns_unsealed ON turns(session_id, captured_at, block_id) WHERE block_id IS NULL;
"""
