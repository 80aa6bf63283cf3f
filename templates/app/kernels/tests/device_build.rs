//! Without a GPU: the device build compiled every kernel with the parameter list its
//! launcher passes, and ptxas accepts the PTX (`pip install nvidia-cuda-nvcc`, or set
//! XLOG_PTXAS, for ptxas).

#[test]
fn launchers_agree_with_the_device_build() {
    kernels::affine_clamp::check_abi().unwrap();
    kernels::accumulate::check_abi().unwrap();
    assert_eq!(kernels::MODULE.kernels().len(), 2);
}

#[test]
fn ptxas_accepts_the_module() {
    xlog_build::ptxas::check_image(&kernels::MODULE).unwrap_or_else(|e| panic!("{e}"));
}
