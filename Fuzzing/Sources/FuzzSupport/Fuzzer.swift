public import Foundation

@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The target of the running fuzzer. Set once, before libFuzzer starts, and only read afterwards.
nonisolated(unsafe) private var currentTarget: ((Data) -> Void)?

/// libFuzzer's entry point: hands each input to the target that ``Fuzzer/run(argc:argv:_:)`` installed.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let input = data.map { Data(bytes: $0, count: count) } ?? Data()
    currentTarget?(input)
    return 0
}

/// Runs libFuzzer's driver over a target.
///
/// SwiftPM links a Linux executable with `main` aliased to `<Module>_main`; each fuzzer defines that symbol and calls
/// ``run(argc:argv:_:)``, so libFuzzer's own options (`-max_total_time`, corpus folders, crash files) all work.
public enum Fuzzer {
    /// Installs `target` and runs libFuzzer with the process's arguments.
    public static func run(
        argc: CInt,
        argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
        _ target: @escaping (Data) -> Void
    ) -> CInt {
        currentTarget = target
        var argc = argc
        var argv = argv
        return LLVMFuzzerRunDriver(&argc, &argv) { data, count in fuzzerTestOneInput(data, count) }
    }

    /// Runs async work to its end from libFuzzer's synchronous callback.
    public static func blocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let box = Box<T>()
        let done = DispatchSemaphore(value: 0)
        Task {
            box.value = await body()
            done.signal()
        }
        done.wait()
        // The task set the value before it signalled.
        return box.value!
    }

    /// Stops the run with `message`: libFuzzer keeps the input that led here as a crash file.
    public static func bug(_ message: String, input: Data) -> Never {
        FileHandle.standardError.write(Data("FUZZ BUG: \(message)\ninput (base64): \(input.base64EncodedString())\n".utf8))
        abort()
    }
}

private final class Box<T>: @unchecked Sendable {
    var value: T?
}
