"""Export and import of what a caller stored (memtrove export / memtrove import)."""
