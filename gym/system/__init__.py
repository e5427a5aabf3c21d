"""The system as data: node kinds (declarations only), the topology, graph designs, the
crawler's built-in graph and what a design costs. No numpy, no SimPy."""
