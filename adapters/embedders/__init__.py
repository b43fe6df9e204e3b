"""Embedders: local ONNX and OpenAI(-compatible)."""
