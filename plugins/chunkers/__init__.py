"""Built-in chunker plugins."""
