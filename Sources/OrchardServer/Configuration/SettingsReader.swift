import AppleID
public import Configuration
import Foundation
import Logging

/// Typed reads of the contract's settings over swift-configuration's reader, each failure naming its setting.
public struct SettingsReader: Sendable {
    /// The environment first, then the file `ORCHARD_CONFIG_FILE` names.
    let reader: ConfigReader

    /// Reads over `reader`.
    public init(_ reader: ConfigReader) {
        self.reader = reader
    }

    func text(_ key: String, secret: Bool = false) -> String? {
        reader.settingText(key, secret: secret)
    }

    func list(_ key: String) -> [String] {
        (text(key) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    func integer(_ key: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int? {
        guard let text = text(key) else { return nil }
        guard let value = Int(text) ?? Double(text).flatMap({ $0.rounded() == $0 ? Int($0) : nil }), range.contains(value) else {
            throw ConfigurationError(setting: key, problem: "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    func seconds(_ key: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Duration? {
        try integer(key, in: range).map { .seconds($0) }
    }

    func port(_ key: String) throws(ConfigurationError) -> Int? {
        guard let text = text(key) else { return nil }
        guard let value = Int(text), (0...65_535).contains(value) else {
            throw ConfigurationError(setting: key, problem: "must be a port number (0-65535)")
        }
        return value
    }

    func url(_ key: String, _ text: String) throws(ConfigurationError) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            url.host?.isEmpty == false
        else {
            throw ConfigurationError(setting: key, problem: "must be an absolute http(s) URL")
        }
        return url
    }

    func url(_ key: String) throws(ConfigurationError) -> URL? {
        guard let text = text(key) else { return nil }
        return try url(key, text)
    }

    /// Reads a `.p8` key file.
    /// - Throws: ``ConfigurationError`` for `setting` when it cannot be read or is not a PKCS#8 PEM key.
    static func readKeyFile(_ keyFile: String, setting: String) throws(ConfigurationError) -> String {
        guard let pem = try? String(contentsOfFile: keyFile, encoding: .utf8) else {
            throw ConfigurationError(setting: setting, problem: "cannot read \(keyFile)")
        }
        guard pem.contains("-----BEGIN PRIVATE KEY-----") else {
            throw ConfigurationError(setting: setting, problem: "\(keyFile) is not a PKCS#8 PEM (.p8) key")
        }
        return pem
    }

    func logLevel() throws(ConfigurationError) -> Logger.Level? {
        guard let text = text("ORCHARD_LOG_LEVEL") else { return nil }
        guard let level = Logger.Level(rawValue: text.lowercased()) else {
            throw ConfigurationError(
                setting: "ORCHARD_LOG_LEVEL",
                problem: "must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))"
            )
        }
        return level
    }
}

extension ConfigReader {
    /// A setting as text, whether the provider holds it as a string, a number or a boolean; trimmed, `nil` when empty.
    func settingText(_ key: String, secret: Bool = false) -> String? {
        settingText([key], secret: secret)
    }

    /// A list setting: an array in the file, or comma-separated text; `nil` when absent.
    func settingList(_ components: [String]) -> [String]? {
        let key = ConfigKey(components)
        let values = stringArray(forKey: key) ?? settingText(components)?.split(separator: ",").map(String.init)
        return values?.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// A nested setting (`apple.teams.0.team_id`) as text; trimmed, `nil` when empty.
    func settingText(_ components: [String], secret: Bool = false) -> String? {
        let configKey = ConfigKey(components)
        let value =
            string(forKey: configKey, isSecret: secret)
            ?? int(forKey: configKey, isSecret: secret).map(String.init)
            ?? double(forKey: configKey, isSecret: secret).map { String($0) }
            ?? bool(forKey: configKey, isSecret: secret).map { String($0) }
        guard let value else { return nil }
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? nil : trimmed
    }
}
