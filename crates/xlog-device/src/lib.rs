//! xlog-device: placeholder filled by its issue.
