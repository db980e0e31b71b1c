/// Starts libFuzzer from a harness's own entry point, for the smoke build (`make fuzz-smoke`).
///
/// There only the harness module is compiled with `-sanitize=fuzzer` (its dependencies keep the
/// test build's compile commands, so nothing else is rebuilt), and SwiftPM links the executable
/// with `main` aliased to `<Harness>_main`, which libFuzzer's own `main` cannot replace. The
/// harness defines that symbol and hands over here; libFuzzer then runs as it would from its
/// `main`. In the full build (`make fuzz`, `--sanitize=fuzzer` for every module) SwiftPM keeps
/// libFuzzer's `main` and this is never called.
public func runLibFuzzer(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, testOneInput)
}

/// libFuzzer's documented entry for a program that has its own `main` (FuzzerInterface.h).
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt
