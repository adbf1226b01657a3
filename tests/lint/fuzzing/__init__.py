"""Fuzzing the linter: generated programs, seeded mutations of the bundled fixtures, and the
properties every file must keep (no internal error, no hang, positions inside the file,
fixes that parse, settle and spare suppressed lines)."""
