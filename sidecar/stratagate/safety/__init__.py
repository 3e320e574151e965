"""What memory may store and show: secret redaction and the inert rendering rule."""
