"""Quality reports: each measures the engine on a labelled set (or a scripted run) and prints its figures."""
