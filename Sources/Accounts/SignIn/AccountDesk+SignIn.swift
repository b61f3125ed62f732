import AppleID
import Foundation
public import Logging
import Metrics

extension AccountDesk {
    /// Signs a user in with what Apple gave the app: verifies the identity token and the nonce, exchanges the
    /// authorization code, creates or finds the account, stores Apple's tokens sealed, and starts a session.
    ///
    /// Nothing is stored when the code exchange fails; the nonce is consumed as soon as the token passes verification.
    /// - Throws: ``AccountsError`` with the contract's sign-in codes.
    public func signIn(_ request: SignInRequest, logger: Logger) async throws(AccountsError) -> SignInResult {
        do {
            let result = try await performSignIn(request, logger: logger)
            Counter(label: "orchard_sign_ins_total", dimensions: [("outcome", result.isNewAccount ? "new_account" : "returning")], factory: metrics)
                .increment()
            return result
        } catch {
            Counter(label: "orchard_sign_ins_total", dimensions: [("outcome", error.code.rawValue)], factory: metrics).increment()
            logger.debug("sign-in refused", metadata: ["error.code": "\(error.code.rawValue)", "error.reason": "\(error.reason)"])
            throw error
        }
    }

    private func performSignIn(_ request: SignInRequest, logger: Logger) async throws(AccountsError) -> SignInResult {
        if let problem = SignInRequest.deviceProblem(request.device) { throw AccountsError(.invalidRequest, problem) }
        let claims: AppleIdentityClaims
        do {
            claims = try await apple.verifyIdentityToken(request.identityToken.value, expectedAudience: request.clientID)
        } catch {
            throw AccountsError.fromApple(error)
        }
        try await consumeNonce(claim: claims.nonce, raw: request.nonce)
        // Read before the exchange: a deletion that commits while Apple answers is then seen by the write below, which
        // refuses to record a sign-in into an account that no longer exists.
        var existing: AccountRecord?
        // An app transfer's import still waiting for its exchange is found by the token's `transfer_sub`, and this
        // sign-in completes it.
        var completesTransfer = false
        do {
            existing = try await store.account(subjectHashes: vault.subjectHashCandidates(claims.sub))
            if existing == nil, let transferSub = claims.transferSub {
                existing = try await store.pendingImport(subjectHashes: vault.subjectHashCandidates(transferSub))
                completesTransfer = existing != nil
            }
        } catch {
            throw AccountsError.storage(error)
        }

        let tokens: AppleTokenResponse
        do {
            tokens = try await apple.exchangeCode(request.authorizationCode, clientID: claims.aud, redirectURI: request.redirectURI)
        } catch {
            let mapped = AccountsError.fromApple(error)
            if mapped.code == .appleClientRejected {
                logger.critical(
                    "Apple refused Orchard's client credentials: check APPLE_TEAM_ID, APPLE_KEY_ID, APPLE_PRIVATE_KEY_FILE",
                    metadata: ["apple.client_id": "\(claims.aud)", "error.reason": "\(mapped.reason)"]
                )
            }
            throw mapped
        }
        var exchanged: AppleIdentityClaims?
        if let idToken = tokens.idToken {
            do {
                exchanged = try await apple.verifyIdentityToken(idToken.value, expectedAudience: claims.aud)
            } catch {
                throw AccountsError(.subjectMismatch, "the id_token Apple returned from the code exchange did not verify")
            }
            guard exchanged?.sub == claims.sub else {
                throw AccountsError(.subjectMismatch, "the code was issued for another user than the identity token")
            }
        }
        // Claims precedence: the email comes only from a signed token, the identity token's else the exchange's.
        let emailSource = claims.email.map { !$0.value.isEmpty } == true ? claims : exchanged

        do {
            return try await storeSignIn(
                existing: existing,
                claims: claims,
                emailSource: emailSource,
                tokens: tokens,
                request: request,
                completesTransfer: completesTransfer
            )
        } catch let error as StoreError where error == .conflict {
            // Two first sign-ins of one user raced; the other created the account, so this one is a returning sign-in.
            do {
                let created = try await store.account(subjectHashes: vault.subjectHashCandidates(claims.sub))
                return try await storeSignIn(existing: created, claims: claims, emailSource: emailSource, tokens: tokens, request: request)
            } catch let error as AccountsError {
                throw error
            } catch {
                throw AccountsError.storage(error)
            }
        } catch let error as AccountsError {
            throw error
        } catch {
            throw AccountsError.storage(error)
        }
    }

    /// Applies the contract's nonce rule and consumes the nonce.
    private func consumeNonce(claim: String?, raw: String?) async throws(AccountsError) {
        guard let claim, !claim.isEmpty else { throw AccountsError(.nonceMissing, "the identity token carries no nonce") }
        guard let raw, !raw.isEmpty else { throw AccountsError(.nonceMissing, "the request carries no nonce") }
        let hashed = AppleNonce.Hashed(raw)
        guard AppleNonce.matches(claim: claim, nonce: hashed) else {
            throw AccountsError(.nonceMismatch, "the identity token's nonce is not the request's nonce")
        }
        let now = clock.now()
        let outcome = try await storing { try await store.consumeNonce(hashes: [hashed.hex], now: now) }
        switch outcome {
        case .consumed: return
        case .alreadyConsumed: throw AccountsError(.nonceReused, "the nonce was used before")
        case .unknownOrExpired: throw AccountsError(.nonceMismatch, "the nonce was not issued by Orchard or has expired")
        }
    }

    private func storeSignIn(
        existing: AccountRecord?,
        claims: AppleIdentityClaims,
        emailSource: AppleIdentityClaims?,
        tokens: AppleTokenResponse,
        request: SignInRequest,
        completesTransfer: Bool = false
    ) async throws -> SignInResult {
        let now = clock.now()
        let isNew = existing == nil
        let id = existing?.id ?? random.id("acct_")
        func seal(_ value: String, _ field: SealingContext.AccountField) throws -> String {
            try vault.seal(value, context: SealingContext.account(id, field))
        }

        var record = try existing ?? sealing.newAccount(id: id, subject: claims.sub, clientID: claims.aud, at: now)
        // The first authorization's name: for a new account, and for one that never signed in here (an imported one,
        // whose name stays unless this brings a new one).
        if isNew || existing?.grantedAt == nil, let user = request.user, user.firstName != nil || user.lastName != nil {
            record.sealedName = try sealing.sealName(AccountView.Name(firstName: user.firstName, lastName: user.lastName), accountID: id)
        }
        // Only a signed token vouches for an email: `user.email` from the app is never stored, or anyone could claim
        // someone else's address and take over an account a backend links by email.
        // An empty `email` (Apple sends one for some students' Managed Apple Accounts) is no email.
        record.orgID = claims.orgID.flatMap { $0.isEmpty ? nil : $0 }
        // `email_verified` describes the email beside it, so it moves only with that email: a token without one changes
        // neither, and can never turn a stored unverified address into a verified one. An absent claim counts as
        // verified for a consumer account and as unverified for a Managed Apple Account (`org_id`).
        if let emailSource, let email = emailSource.email, !email.value.isEmpty {
            try record.setEmail(email.value, vault: vault)
            record.isPrivateEmail = emailSource.isPrivateEmail ?? false
            record.emailVerified = emailSource.emailVerified ?? (record.orgID == nil)
        } else if isNew {
            record.emailVerified = claims.emailVerified ?? (record.orgID == nil)
        }
        record.clientID = claims.aud
        if completesTransfer {
            // Re-keyed from the transfer identifier to this team's subject.
            record.subjectHash = vault.subjectHash(claims.sub)
            record.sealedSubject = try seal(claims.sub.value, .subject)
        }
        if let refresh = tokens.refreshToken {
            record.sealedRefreshToken = try seal(refresh.value, .refreshToken)
            record.appleCredential = .valid
        } else if record.sealedRefreshToken == nil || record.appleCredential != .valid {
            record.appleCredential = .unknown
        }
        if let access = tokens.accessToken { record.sealedAccessToken = try seal(access.value, .accessToken) }
        record.sealedIdentityToken = try seal((tokens.idToken ?? request.identityToken).value, .identityToken)
        record.lastValidatedAt = now
        record.grantedAt = now
        record.nextValidationAt = record.sealedRefreshToken == nil ? nil : timing.next(after: now)
        record.updatedAt = now

        let token = random.token()
        let sessionID = random.id("sess_")
        let session = SessionRecord(
            id: sessionID,
            tokenHash: Self.sha256Hex(token),
            accountID: id,
            createdAt: now,
            expiresAt: now.addingTimeInterval(configuration.sessionTTL.seconds),
            sealedDevice: try request.device.map { try vault.seal($0, context: SealingContext.session(sessionID)) },
            clientID: claims.aud
        )
        // If the account is deleted before this write, the grant Apple just gave goes to the revocation outbox instead:
        // nothing of the sign-in is stored, and the fresh token does not outlive the account it was meant for.
        let fresh = tokens.refreshToken.map { ($0, TokenTypeHint.refreshToken) } ?? tokens.accessToken.map { ($0, .accessToken) }
        let revocation = try fresh.map { token, hint in
            let jobID = random.id("rev_")
            return RevocationJob(
                id: jobID,
                clientID: claims.aud,
                sealedToken: try vault.seal(token.value, context: SealingContext.revocation(jobID)),
                hint: hint,
                attempts: 0,
                nextAttemptAt: now,
                leaseUntil: nil,
                lastError: nil,
                createdAt: now
            )
        }
        let eventID = random.id("evt_", at: now)
        let signedIn = HistoryEvent(
            id: eventID,
            accountID: id,
            kind: .signedIn,
            occurredAt: now,
            sessionID: sessionID,
            sealedDevice: try request.device.map { try vault.seal($0, context: SealingContext.historyEvent(eventID)) }
        )
        let recorded = try await store.recordSignIn(
            SignInRecord(
                account: record,
                isNew: isNew,
                session: session,
                history: [signedIn],
                revocationIfGone: revocation,
                completesTransfer: completesTransfer
                    ? TransferCompletion(
                        webhooks: webhooks.deliveries(.transferred, accountID: id, at: now),
                        history: [.transferred(accountID: id, at: now)],
                        at: now
                    ) : nil
            )
        )
        guard recorded else {
            wakeups.notify(.revocations)
            throw AccountsError(
                .authorizationCodeRejected,
                "the account was deleted while this sign-in was under way; nothing was stored and Apple's new grant is revoked"
            )
        }
        if completesTransfer { wakeups.notify(.webhooks) }
        return SignInResult(
            sessionToken: Redacted(token),
            sessionExpiresAt: session.expiresAt,
            account: try sealing.view(of: record.sealedView),
            isNewAccount: isNew
        )
    }
}
