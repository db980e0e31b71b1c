import ChorusCore
import Foundation
import Testing

/// The runtime check behind the codecs' `@unchecked Sendable`: one user at a time passes, a
/// second user while the first is inside traps.
@Suite("Exclusive use check")
struct ExclusiveUseCheckTests {
    /// Calls one after another pass, from one thread or from several in turn, and hand back
    /// the body's result and its error.
    @Test func turnsPass() async throws {
        final class Box: Sendable {
            let check = ExclusiveUseCheck()
        }
        let box = Box()
        #expect(box.check.run("box") { 42 } == 42)
        #expect(throws: CocoaError.self) { try box.check.run("box") { throw CocoaError(.featureUnsupported) } }
        for _ in 0..<4 {
            await Task.detached { box.check.run("box") {} }.value
        }
        #expect(box.check.run("box") { "again" } == "again")
    }

    /// A second entry while the first has not left (here nested on one thread, which is what
    /// a second thread arriving mid-call looks like to the check) stops the process.
    @Test func overlapTraps() async {
        await #expect(processExitsWith: .failure) {
            let check = ExclusiveUseCheck()
            check.run("first") { check.run("second") {} }
        }
    }
}
