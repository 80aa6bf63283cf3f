//! xlog: placeholder filled by its issue.
