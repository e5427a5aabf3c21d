"""The flow engine: integer counts of URLs per tick through a topology, one component per
node, built by the rule of its kind (a module named after it, mapped in rules)."""
