"""Embedding models: the shipped ONNX model and the export of other local ones."""
