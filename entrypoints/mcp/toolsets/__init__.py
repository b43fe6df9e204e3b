"""Toolsets: each module declares its tools (schema, one use case, rendering)."""
