import FuzzEntryPoints

/// libFuzzer harness (built only with CHORUS_FUZZ=1 and `--sanitize=fuzzer`; run by `make fuzz`).
/// libFuzzer supplies `main` and calls this once per input; see `FuzzTarget.tcpFraming`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.tcpFraming.exercise(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
