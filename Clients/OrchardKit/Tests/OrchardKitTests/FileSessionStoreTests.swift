import Foundation
import OrchardKit
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `FileSessionStore` on the real file system: the mode of everything it writes, and the folders and links it refuses.
@Suite("FileSessionStore")
struct FileSessionStoreTests {
    /// A session whose account is decoded from Orchard's JSON (`Account` has no public initializer); `padding` makes
    /// the file that much bigger, so that writing it takes a while.
    static func session(token: String = "token-1", padding: Int = 0) throws -> StoredSession {
        let json = """
            {"token": "\(token)", "expiresAt": "2100-01-01T00:00:00Z", "account": {"id": "acct_1", "apple_sub": "001234.abc.0001",
            "is_private_email": false, "email_forwarding": "enabled", "created_at": "2025-01-01T00:00:00Z",
            "apple_credential": "valid", "name": {"first_name": "\(String(repeating: "A", count: padding))"}}}
            """
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(StoredSession.self, from: Data(json.utf8))
    }

    /// A new folder of its own with `mode` (set with chmod, whatever the umask).
    static func folder(mode: mode_t = 0o700) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("orchardkit-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        guard chmod(folder.path, mode) == 0 else { throw Failure("chmod \(folder.path) failed") }
        return folder
    }

    /// The permission bits of `path` itself (a link is not followed), or `nil` when nothing is there.
    static func mode(_ path: String) -> mode_t? {
        var status = stat()
        guard lstat(path, &status) == 0 else { return nil }
        return status.st_mode & 0o7777
    }

    /// Why the store refused, when `error` is the store's.
    static func reason(_ error: (any Error)?) -> FileSessionStore.FileError.Reason? {
        (error as? FileSessionStore.FileError)?.reason
    }

    /// Lists a folder and `lstat`s everything in it, over and over on a thread of its own, until stopped; records every
    /// entry whose mode is not 0600.
    final class ModeWatcher: @unchecked Sendable {
        private let folder: String
        private let condition = NSCondition()
        private var stopping = false
        private var finished = false
        private var wrong: [String] = []
        private var temporaries = 0

        /// Starts watching `folder`.
        init(folder: String) {
            self.folder = folder
            Thread { [self] in run() }.start()
        }

        /// The first entries seen with another mode than 0600, as `name mode`.
        var wrongModes: [String] { condition.withLock { wrong } }
        /// How many times an entry other than the session file itself was seen.
        var temporariesSeen: Int { condition.withLock { temporaries } }

        /// Stops watching, once the scan under way is done.
        func stop() {
            condition.withLock {
                stopping = true
                while !finished { condition.wait() }
            }
        }

        private func run() {
            while !condition.withLock({ stopping }) {
                for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
                    guard let mode = FileSessionStoreTests.mode("\(folder)/\(name)") else { continue }  // renamed meanwhile
                    condition.withLock {
                        if name != "session.json" { temporaries += 1 }
                        if mode != 0o600 && wrong.count < 10 { wrong.append("\(name) \(String(mode, radix: 8))") }
                    }
                }
            }
            condition.withLock {
                finished = true
                condition.broadcast()
            }
        }
    }

    @Test("under umask 022 every file the store writes is 0600 at every moment a watcher sees, and no temporary file is left")
    func modeAtEveryMoment() throws {
        let previousMask = umask(0o022)
        defer { umask(previousMask) }
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = FileSessionStore(url: folder.appendingPathComponent("session.json"))
        let session = try Self.session(padding: 4 << 20)
        let watcher = ModeWatcher(folder: folder.path)
        // Save until the watcher has caught a save in the middle a few times (each save holds a temporary file for as
        // long as 4 MB take to write and flush), or 100 saves.
        var saves = 0
        while watcher.temporariesSeen < 5 && saves < 100 {
            try store.save(session)
            saves += 1
        }
        watcher.stop()
        #expect(watcher.temporariesSeen > 0, "the watcher never saw a save in progress in \(saves) saves")
        #expect(watcher.wrongModes.isEmpty)
        #expect(Self.mode(store.url.path) == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["session.json"])
        #expect(try store.load() == session)
    }

    @Test("a missing folder is created 0700; save replaces the session; remove removes it and removing nothing is fine")
    func createReplaceRemove() throws {
        let parent = try Self.folder()
        defer { try? FileManager.default.removeItem(at: parent) }
        let store = FileSessionStore(url: parent.appendingPathComponent("app/data/session.json"))
        #expect(try store.load() == nil)
        try store.save(try Self.session(token: "first"))
        try store.save(try Self.session(token: "second"))
        #expect(try store.load()?.token == "second")
        #expect(Self.mode(parent.appendingPathComponent("app/data").path) == 0o700)
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.appendingPathComponent("app/data").path) == ["session.json"])
        try store.remove()
        #expect(try store.load() == nil)
        try store.remove()
    }

    @Test("a folder its group or others can write is refused, sticky or not, and nothing is written in it", arguments: ["777", "770", "702", "1777"])
    func writableFolderRefused(octalMode: String) throws {
        let folder = try Self.folder(mode: try #require(mode_t(octalMode, radix: 8)))
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = FileSessionStore(url: folder.appendingPathComponent("session.json"))
        let error = #expect(throws: FileSessionStore.FileError.self) { try store.save(try Self.session()) }
        #expect(Self.reason(error) == .folderWritableByOthers)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    }

    @Test("a symbolic link at the file's path is not followed: save and load refuse it, remove removes the link only")
    func symbolicLinkNotFollowed() throws {
        let folder = try Self.folder()
        let elsewhere = try Self.folder()
        defer {
            try? FileManager.default.removeItem(at: folder)
            try? FileManager.default.removeItem(at: elsewhere)
        }
        let store = FileSessionStore(url: folder.appendingPathComponent("session.json"))
        // A link to a file holding someone else's session, readable by all.
        let planted = elsewhere.appendingPathComponent("planted.json")
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        let plantedBytes = try encoder.encode(try Self.session(token: "planted"))
        try plantedBytes.write(to: planted)
        guard chmod(planted.path, 0o644) == 0 else { throw Failure("chmod failed") }
        try FileManager.default.createSymbolicLink(atPath: store.url.path, withDestinationPath: planted.path)

        let saving = #expect(throws: FileSessionStore.FileError.self) { try store.save(try Self.session(token: "mine")) }
        #expect(Self.reason(saving) == .symbolicLink)
        let loading = #expect(throws: FileSessionStore.FileError.self) { try store.load() }
        #expect(Self.reason(loading) == .symbolicLink)
        #expect(try Data(contentsOf: planted) == plantedBytes)
        #expect(Self.mode(planted.path) == 0o644)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: store.url.path) == planted.path)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["session.json"])

        // A dangling link: save does not create its target either.
        try FileManager.default.removeItem(atPath: store.url.path)
        let target = elsewhere.appendingPathComponent("created.json")
        try FileManager.default.createSymbolicLink(atPath: store.url.path, withDestinationPath: target.path)
        #expect(Self.reason(#expect(throws: FileSessionStore.FileError.self) { try store.save(try Self.session()) }) == .symbolicLink)
        #expect(!FileManager.default.fileExists(atPath: target.path))

        // Wiping removes the link itself and leaves what it points to.
        try FileManager.default.removeItem(atPath: store.url.path)
        try FileManager.default.createSymbolicLink(atPath: store.url.path, withDestinationPath: planted.path)
        try store.remove()
        #expect(Self.mode(store.url.path) == nil)
        #expect(try Data(contentsOf: planted) == plantedBytes)
    }
}
