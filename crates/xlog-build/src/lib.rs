//! xlog-build: placeholder filled by its issue.
