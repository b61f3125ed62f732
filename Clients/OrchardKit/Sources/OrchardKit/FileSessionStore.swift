public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A session kept in a JSON file that only the app's user can read: mode 0600 from the moment the file exists, written
/// atomically.
///
/// Each save writes a new file beside the old one, created with `open(2)` (`O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600),
/// flushes it to disk and renames it over the old one, so the file is never readable by others and never half written.
/// The store refuses (``FileError``) a folder that its group or other users can write, since they could replace the
/// file or plant a session of their own, and a file path that is a symbolic link, which it neither writes nor reads
/// through.
public struct FileSessionStore: SessionStore {
    /// The file.
    public let url: URL

    /// Creates a store in `url`. Its folder is created (mode 0700) on the first save when missing; an existing folder
    /// must not be writable by its group or by others.
    public init(url: URL) {
        self.url = url
    }

    /// Why the store would not, or could not, use its file.
    public struct FileError: Error, Sendable, Hashable, CustomStringConvertible {
        /// What went wrong.
        public enum Reason: Sendable, Hashable {
            /// The folder can be written by its group or by other users: give the store a folder only the app's user
            /// can write (e.g. mode 0700).
            case folderWritableByOthers
            /// The file's path is a symbolic link, which the store does not follow.
            case symbolicLink
            /// A system call failed with `errno`.
            case system(call: String, errno: Int32)
        }

        /// What went wrong.
        public let reason: Reason
        /// The path it concerns.
        public let path: String

        /// What went wrong and where, for logs.
        public var description: String {
            switch reason {
            case .folderWritableByOthers: "the session store's folder \(path) is writable by others (group or other write permission)"
            case .symbolicLink: "the session file \(path) is a symbolic link, which the store does not follow"
            case .system(let call, let code): "\(call) failed on \(path): \(String(cString: strerror(code)))"
            }
        }

        fileprivate static func system(_ call: String, path: String, errno code: Int32 = errno) -> Self {
            FileError(reason: .system(call: call, errno: code), path: path)
        }
    }

    /// The stored session, or `nil` when there is no file.
    ///
    /// - Throws: ``FileError`` with ``FileError/Reason/symbolicLink`` when the path is a symbolic link; what decoding
    ///   throws when the file is not a session.
    public func load() throws -> StoredSession? {
        let descriptor = open(url.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            if code == ENOENT { return nil }
            if code == ELOOP { throw FileError(reason: .symbolicLink, path: url.path) }
            throw FileError.system("open", path: url.path, errno: code)
        }
        let data = try FileHandle(fileDescriptor: descriptor, closeOnDealloc: true).readToEnd() ?? Data()
        return try OrchardJSON.decoder.decode(StoredSession.self, from: data)
    }

    /// Stores `session`: a temporary file in the same folder, created 0600, written, flushed and renamed over the file.
    ///
    /// - Throws: ``FileError``: ``FileError/Reason/folderWritableByOthers``, ``FileError/Reason/symbolicLink``, or the
    ///   system call that failed. The old file, if any, is then left as it was.
    public func save(_ session: StoredSession) throws {
        let data = try OrchardJSON.encoder.encode(session)
        let folder = url.deletingLastPathComponent().path
        try Self.makeFolder(folder)
        try Self.checkFolder(folder)
        var status = stat()
        if lstat(url.path, &status) == 0, status.st_mode & Self.typeMask == Self.symbolicLinkType {
            throw FileError(reason: .symbolicLink, path: url.path)
        }
        let temporary = (folder as NSString).appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString)")
        // 0600 from creation (a umask can only take bits away); O_EXCL and O_NOFOLLOW: a new file, never one planted.
        let descriptor = open(temporary, O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw FileError.system("open", path: temporary) }
        do {
            try Self.writeAll(data, to: descriptor, path: temporary)
            guard fsync(descriptor) == 0 else { throw FileError.system("fsync", path: temporary) }
        } catch {
            close(descriptor)
            unlink(temporary)
            throw error
        }
        guard close(descriptor) == 0 else {
            let code = errno
            unlink(temporary)
            throw FileError.system("close", path: temporary, errno: code)
        }
        guard rename(temporary, url.path) == 0 else {
            let code = errno
            unlink(temporary)
            throw FileError.system("rename", path: url.path, errno: code)
        }
        // The rename survives a crash once the folder is flushed too; failing here loses nothing already done.
        let folderDescriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderDescriptor >= 0 {
            _ = fsync(folderDescriptor)
            close(folderDescriptor)
        }
    }

    /// Removes the file (a symbolic link at its path is removed, not followed); removing nothing is not an error.
    public func remove() throws {
        guard unlink(url.path) == 0 || errno == ENOENT else { throw FileError.system("unlink", path: url.path) }
    }

    private static let typeMask = mode_t(0o170_000)
    private static let symbolicLinkType = mode_t(0o120_000)
    private static let directoryType = mode_t(0o040_000)
    private static let groupOrOtherWrite = mode_t(0o022)

    /// Creates `folder` with mode 0700 when it is missing (its missing parents too).
    private static func makeFolder(_ folder: String) throws {
        if mkdir(folder, 0o700) == 0 { return }
        switch errno {
        case EEXIST: return
        case ENOENT:
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        default: throw FileError.system("mkdir", path: folder)
        }
    }

    /// Refuses a folder that its group or other users can write: they could rename a file of their own over the session.
    private static func checkFolder(_ folder: String) throws {
        var status = stat()
        guard stat(folder, &status) == 0 else { throw FileError.system("stat", path: folder) }
        guard status.st_mode & typeMask == directoryType else { throw FileError.system("stat", path: folder, errno: ENOTDIR) }
        guard status.st_mode & groupOrOtherWrite == 0 else { throw FileError(reason: .folderWritableByOthers, path: folder) }
    }

    private static func writeAll(_ data: Data, to descriptor: Int32, path: String) throws {
        try data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            guard let base = bytes.baseAddress else { return }
            var offset = 0
            while offset < bytes.count {
                let written = write(descriptor, base + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw FileError.system("write", path: path)
                }
                offset += written
            }
        }
    }
}
