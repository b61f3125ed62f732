/// Where an import's file comes from (`orchard accounts import --from`), and how its records are laid out.
public enum ImportSource: String, Sendable, CaseIterable {
    /// Orchard's own JSON Lines.
    case orchard
    /// Firebase Authentication: `{"users": [...]}` from the Admin SDK's `listUsers` or `firebase auth:export`.
    case firebase
    /// Supabase Auth's `auth.identities` rows, as JSON Lines or a JSON array.
    case supabase
    /// Auth0's user export, JSON Lines.
    case auth0

    /// How the file holds its records; Supabase's is told by its first character (`[` for an array).
    public func layout(firstCharacter: UInt8?) -> JSONRecordReader.Layout {
        switch self {
        case .orchard, .auth0: .lines
        case .firebase: .array(key: "users")
        case .supabase: firstCharacter == UInt8(ascii: "[") ? .array(key: nil) : .lines
        }
    }
}
