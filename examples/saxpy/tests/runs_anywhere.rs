//! `cargo run --release -p saxpy` runs on any machine: on the GPU when there is one,
//! else on the simulator, saying so, with exit status 0; `XLOG_BACKEND=gpu` demands
//! a GPU (exit status 2 without one). Runs the example's binary as a user does, on a
//! small input.

use std::process::{Command, Output};

/// The example over 50,000 elements with `XLOG_BACKEND` set to `backend`, or
/// unset.
fn saxpy(backend: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_saxpy"));
    cmd.arg("50000");
    match backend {
        Some(b) => cmd.env("XLOG_BACKEND", b),
        None => cmd.env_remove("XLOG_BACKEND"),
    };
    cmd.output().expect("the example runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn runs_on_the_gpu_or_says_it_falls_back_to_the_simulator() {
    let o = saxpy(None);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let on_sim = t.contains("ok: the simulator result matches the CPU");
    assert!(
        on_sim || t.contains("ok: the GPU result matches the CPU"),
        "{t}"
    );
    assert_eq!(
        on_sim,
        t.contains("running on xlog's CPU simulator instead"),
        "the fallback is said exactly when it happens:\n{t}"
    );

    let o = saxpy(Some("gpu"));
    let t = text(&o);
    if on_sim {
        assert_eq!(o.status.code(), Some(2), "{t}");
        assert!(t.contains("this example needs an NVIDIA GPU"), "{t}");
    } else {
        assert_eq!(o.status.code(), Some(0), "{t}");
        assert!(t.contains("ok: the GPU result matches the CPU"), "{t}");
    }
}

#[test]
fn the_simulator_on_request() {
    let o = saxpy(Some("sim"));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains("ok: the simulator result matches the CPU"),
        "{t}"
    );
    assert!(!t.contains("no GPU here"), "{t}");
}

#[test]
fn a_bad_size_is_a_usage_error() {
    let o = Command::new(env!("CARGO_BIN_EXE_saxpy"))
        .arg("many")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("usage: saxpy [ELEMENTS]"), "{}", text(&o));
}
