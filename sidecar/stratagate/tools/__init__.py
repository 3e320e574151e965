"""Agent tools: schemas for tools.list, execution for tools.call."""
