"""Embedding models: the shipped ONNX model, and the torch-free build of it and of other local BERT models."""
