"""The command line for people: commands that reach the store as MCP clients of its server."""
