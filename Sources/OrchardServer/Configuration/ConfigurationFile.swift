import Configuration
import Foundation
import Yams

/// The file `ORCHARD_CONFIG_FILE` names, JSON or YAML (by its `.yaml`/`.yml` extension), as a configuration provider.
///
/// swift-configuration's file providers read objects and arrays of scalars; `apple.teams` is an array of objects. So
/// the file is read here and flattened into keys: `{"apple": {"teams": [{"team_id": "A"}]}}` becomes
/// `apple.teams.0.team_id`, and a top-level `ORCHARD_PORT` stays `ORCHARD_PORT`, as swift-configuration would name it.
enum ConfigurationFile {
    /// The settings whose values are secrets (shown redacted by swift-configuration's own descriptions).
    static let secretKeys: Set<String> = ["ORCHARD_VAULT_KEYS", "ORCHARD_WEBHOOK_SECRET", "ORCHARD_DATABASE_URL"]

    /// Reads and flattens the file.
    /// - Throws: ``ConfigurationError`` for `ORCHARD_CONFIG_FILE` when the file cannot be read or is not a JSON or YAML
    ///   object of settings.
    static func provider(_ path: String) throws(ConfigurationError) -> InMemoryProvider {
        let tree: Any?
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            if path.hasSuffix(".yaml") || path.hasSuffix(".yml") {
                tree = try Yams.load(yaml: String(decoding: data, as: UTF8.self))
            } else {
                tree = try JSONSerialization.jsonObject(with: data)
            }
        } catch {
            throw ConfigurationError(setting: "ORCHARD_CONFIG_FILE", problem: "cannot read \(path) as JSON or YAML: \(error)")
        }
        guard let object = tree as? [String: Any] else {
            throw ConfigurationError(setting: "ORCHARD_CONFIG_FILE", problem: "\(path) must hold an object of settings")
        }
        var values: [AbsoluteConfigKey: ConfigValue] = [:]
        try flatten(object, under: [], into: &values, path: path)
        return InMemoryProvider(name: path, values: values)
    }

    private static func flatten(
        _ value: Any,
        under key: [String],
        into values: inout [AbsoluteConfigKey: ConfigValue],
        path: String
    ) throws(ConfigurationError) {
        let isSecret = key.count == 1 && secretKeys.contains(key[0])
        func set(_ content: ConfigContent) { values[AbsoluteConfigKey(key)] = ConfigValue(content, isSecret: isSecret) }
        switch value {
        case let object as [String: Any]:
            for (name, inner) in object { try flatten(inner, under: key + [name], into: &values, path: path) }
        case let array as [Any]:
            if array.allSatisfy({ $0 is [String: Any] }), !array.isEmpty {
                for (index, inner) in array.enumerated() {
                    try flatten(inner, under: key + [String(index)], into: &values, path: path)
                }
            } else if let strings = array as? [String] {
                set(.stringArray(strings))
            } else {
                // Numbers or mixed scalars: as text, the way the loader reads every setting.
                set(.stringArray(array.map { scalarText($0) ?? "" }))
            }
        case is NSNull:
            break
        default:
            guard let text = scalarText(value) else {
                throw ConfigurationError(
                    setting: "ORCHARD_CONFIG_FILE",
                    problem: "\(path): \(key.joined(separator: ".")) is not a string, number or boolean"
                )
            }
            set(.string(text))
        }
    }

    /// A scalar as the text the loader parses: strings as they are, numbers without a needless `.0`, booleans (no
    /// setting is one). Tried in swift-configuration's own order: integer, then floating point, then boolean.
    private static func scalarText(_ value: Any) -> String? {
        switch value {
        case let text as String: return text
        case let int as Int: return String(int)
        case let double as Double: return double.rounded() == double && abs(double) < 1e15 ? String(Int(double)) : String(double)
        case let bool as Bool: return bool ? "true" : "false"
        default: return nil
        }
    }
}
