"""Curation: what an operator sees and does in the studio, each operator's review state, and export."""
