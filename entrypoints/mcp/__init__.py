"""The MCP entrypoint: the toolsets, their registry and the server built from it."""
