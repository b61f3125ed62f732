import FuzzSupport

/// libFuzzer over the web flow's callback, Apple's form post (see `HTTPFuzzing.callbackForm`).
@_cdecl("FuzzCallbackForm_main")
func fuzzCallbackFormMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    let fuzzing = HTTPFuzzing.shared
    return Fuzzer.run(argc: argc, argv: argv) { fuzzing.callbackForm($0) }
}
