#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The few libm functions the mixer needs, in one place so the rest of the target does not
/// import the platform C library (and Foundation is not pulled in for four functions).
enum MixerMath {
    @inline(__always) static func log10(_ x: Float) -> Float { log10f(x) }
    @inline(__always) static func exp(_ x: Float) -> Float { expf(x) }
    @inline(__always) static func tanh(_ x: Float) -> Float { tanhf(x) }
    @inline(__always) static func pow(_ x: Float, _ y: Float) -> Float { powf(x, y) }
}
