"""Use cases: one callable per concern, built from ports."""
