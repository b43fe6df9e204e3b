"""upkeep."""
