"""Recall, per turn: a message's words (tokens, numbers, places, the lexicon) -> the ranked index ->
the <knowledge> block; the warm index a container keeps, and its snapshot."""
