"""The query engine: routing, the retrievers over the flat index, the tree and the graph, ranking and composition."""
