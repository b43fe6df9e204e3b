"""zapomni."""
