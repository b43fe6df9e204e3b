"""Configuration: settings from the environment and the composition root."""
