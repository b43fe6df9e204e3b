"""Embedders: local ONNX, OpenAI(-compatible), Voyage and Jina."""
