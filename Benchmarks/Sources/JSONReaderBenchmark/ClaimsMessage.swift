import SwiftProtobuf

/// An identity token's claims as a protobuf message, for swift-protobuf's JSON reader: what protoc-gen-swift generates
/// for a proto3 message of these sixteen fields (`optional string`, or `google.protobuf.Value` for the claims Apple sends
/// in more than one shape), each JSON name the claim's own. Only decoding is used.
struct ClaimsMessage: Sendable {
    var unknownFields = SwiftProtobuf.UnknownStorage()
    var iss: String?
    var aud: Google_Protobuf_Value?
    var exp: Google_Protobuf_Value?
    var iat: Google_Protobuf_Value?
    var sub: String?
    var email: String?
    var emailVerified: Google_Protobuf_Value?
    var isPrivateEmail: Google_Protobuf_Value?
    var realUserStatus: Google_Protobuf_Value?
    var authTime: Google_Protobuf_Value?
    var nonce: String?
    var nonceSupported: Google_Protobuf_Value?
    var cHash: String?
    var atHash: String?
    var transferSub: String?
    var orgID: String?

    init() {}
}

extension ClaimsMessage: SwiftProtobuf.Message, SwiftProtobuf._MessageImplementationBase, SwiftProtobuf._ProtoNameProviding {
    static let protoMessageName = "orchard.bench.Claims"
    // swift-format-ignore
    static let _protobuf_nameMap = SwiftProtobuf._NameMap(bytecode: "\0\u{1}iss\0\u{1}aud\0\u{1}exp\0\u{1}iat\0\u{1}sub\0\u{1}email\0\u{1}email_verified\0\u{1}is_private_email\0\u{1}real_user_status\0\u{1}auth_time\0\u{1}nonce\0\u{1}nonce_supported\0\u{1}c_hash\0\u{1}at_hash\0\u{1}transfer_sub\0\u{1}org_id\0")

    mutating func decodeMessage<D: SwiftProtobuf.Decoder>(decoder: inout D) throws {
        while let field = try decoder.nextFieldNumber() {
            switch field {
            case 1: try decoder.decodeSingularStringField(value: &iss)
            case 2: try decoder.decodeSingularMessageField(value: &aud)
            case 3: try decoder.decodeSingularMessageField(value: &exp)
            case 4: try decoder.decodeSingularMessageField(value: &iat)
            case 5: try decoder.decodeSingularStringField(value: &sub)
            case 6: try decoder.decodeSingularStringField(value: &email)
            case 7: try decoder.decodeSingularMessageField(value: &emailVerified)
            case 8: try decoder.decodeSingularMessageField(value: &isPrivateEmail)
            case 9: try decoder.decodeSingularMessageField(value: &realUserStatus)
            case 10: try decoder.decodeSingularMessageField(value: &authTime)
            case 11: try decoder.decodeSingularStringField(value: &nonce)
            case 12: try decoder.decodeSingularMessageField(value: &nonceSupported)
            case 13: try decoder.decodeSingularStringField(value: &cHash)
            case 14: try decoder.decodeSingularStringField(value: &atHash)
            case 15: try decoder.decodeSingularStringField(value: &transferSub)
            case 16: try decoder.decodeSingularStringField(value: &orgID)
            default: break
            }
        }
    }

    /// Not used: the benchmark only decodes.
    func traverse<V: SwiftProtobuf.Visitor>(visitor: inout V) throws {}

    static func == (lhs: ClaimsMessage, rhs: ClaimsMessage) -> Bool {
        lhs.sub == rhs.sub && lhs.nonce == rhs.nonce
    }
}
