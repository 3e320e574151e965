"""Blocks: runs of turns sealed into six views (L5 source .. L0 title) that decay and re-expand."""
