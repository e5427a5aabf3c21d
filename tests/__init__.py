"""The test suite: a package of its own, so that its modules (``tests.conftest``) are found
before any other top-level ``tests`` package installed beside the gym (Ciw's wheel ships one)."""
