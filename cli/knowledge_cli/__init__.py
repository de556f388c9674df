"""The `knowledge` command: an operator's entry point, like functions/*/app.py for Lambda; it composes
both loops (knowledge and facts) and is the only package that may import both."""
