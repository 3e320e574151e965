"""Events: decisions, preferences, plans and changes extracted from blocks, with mention vs occurrence time."""
