//! xlog-macros: placeholder filled by its issue.
