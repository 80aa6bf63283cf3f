//! xlog-kernels: placeholder filled by its issue.
