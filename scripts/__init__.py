"""The project's benches (bench/), quality reports (reports/), build steps (gen/) and their shared
code (lib/), run as modules from the repository root: `./run script bench.knowledge_index --smoke`
(docs/evaluation.md lists them all)."""
