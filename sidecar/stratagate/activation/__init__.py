"""Activation: the memory text injected into every model step."""
