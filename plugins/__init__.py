"""Plugins: chunkers and privacy policies, registered through pluggy hooks."""
