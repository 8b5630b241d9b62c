//! Black-box suites live in tests/*.rs.
