import FuzzDriver
import FuzzEntryPoints

/// libFuzzer harness (built only with CHORUS_FUZZ set; run by `make fuzz` and `make fuzz-smoke`).
/// libFuzzer calls this once per input; see `FuzzTarget.tcpFraming`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.tcpFraming.exercise(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

/// The smoke build's entry point (`main` is aliased to it there; see `runLibFuzzer`).
@_cdecl("FuzzTCPFraming_main")
func harnessMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runLibFuzzer(argc, argv, fuzzTestOneInput)
}
