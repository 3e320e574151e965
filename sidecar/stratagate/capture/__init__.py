"""Capture: a completed turn becomes durable rows before anything else happens."""
