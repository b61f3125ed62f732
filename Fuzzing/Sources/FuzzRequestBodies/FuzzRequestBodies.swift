import FuzzSupport

/// libFuzzer over the JSON request bodies of a running Orchard (see `HTTPFuzzing.requestBody`).
@_cdecl("FuzzRequestBodies_main")
func fuzzRequestBodiesMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    let fuzzing = HTTPFuzzing.shared
    return Fuzzer.run(argc: argc, argv: argv) { fuzzing.requestBody($0) }
}
