"""Grading a whole class: `judge batch`.

One way through: files found (discover) -> graded in lanes, each grading
exactly as `judge submit` grades (lanes, lane) -> results streamed back to
the one writer, the batch process (run) -> the SQLite store (store; a
row's values: row_values) ->
exports (judge.export). The progress display and JSON lines: progress.
"""
