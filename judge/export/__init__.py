"""Exports of a results store (judge.batch.store): the gradebook CSV,
Gradescope's results.json, JUnit XML (xunit2), a self-contained HTML report,
a similarity report and JSON lines. Each reads Store.rows() and writes one
file; none writes to the store."""
