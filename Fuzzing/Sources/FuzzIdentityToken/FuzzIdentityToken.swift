import FuzzSupport

/// libFuzzer over `AppleTokenVerifier.verifyIdentityToken` (see `TokenFuzzing`).
@_cdecl("FuzzIdentityToken_main")
func fuzzIdentityTokenMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    let fuzzing = TokenFuzzing.shared
    return Fuzzer.run(argc: argc, argv: argv) { fuzzing.identityToken($0) }
}
