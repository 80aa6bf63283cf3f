fn main() {
    xlog_build::Builder::new().run();
}
