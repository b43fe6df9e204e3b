"""memories."""
