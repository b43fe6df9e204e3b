"""Entrypoints: the MCP server (stdio and streamable HTTP) and the command line."""
