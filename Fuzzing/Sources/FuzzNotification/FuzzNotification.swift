import FuzzSupport

/// libFuzzer over `AppleTokenVerifier.verifyNotification` (see `TokenFuzzing`).
@_cdecl("FuzzNotification_main")
func fuzzNotificationMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    let fuzzing = TokenFuzzing.shared
    return Fuzzer.run(argc: argc, argv: argv) { fuzzing.notification($0) }
}
