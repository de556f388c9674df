"""What the test modules share: plain helpers and constants (the fixtures are in the conftest.py files).

tests/ is on the import path (pyproject's pytest `pythonpath`), so a test module writes
`from helpers.handlers import load_handler`; no test module imports another.
"""
