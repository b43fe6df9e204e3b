"""Built-in privacy policy plugins."""
