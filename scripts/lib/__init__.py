"""Code the benches and reports share: the harness, the synthetic corpus, the labelled stores' runs."""
