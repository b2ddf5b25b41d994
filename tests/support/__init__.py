"""Test support shared by the test suite and the benchmarks (real servers on 127.0.0.1)."""
