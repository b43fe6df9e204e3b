"""memtrove's domain: models, ports and use cases; imports only the standard library."""
