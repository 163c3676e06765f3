"""Tests of what surrounds the package: docs, examples, the CLI, the bench, the pytest plugin."""
