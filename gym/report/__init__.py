"""Plots, result directories and HTML reports. Imported only when asked for (matplotlib)."""
