"""Migration 11: erase reaches the context archive.

``context_nodes`` rows are immutable (an archived node is what the model saw), but an erase must blank the nodes
that hold the erased text, as it blanks captured messages: the trigger now lets an update through inside the
privileged-write window of migration 6 (``privileged_writes``, present only inside an erase or scrub transaction).
"""

ERASE_SQL = """
DROP TRIGGER context_nodes_immutable;
CREATE TRIGGER context_nodes_immutable BEFORE UPDATE ON context_nodes
WHEN NOT EXISTS (SELECT 1 FROM privileged_writes)
BEGIN SELECT RAISE(ABORT, 'archived context nodes are immutable'); END;
"""
