internal import CoreMetrics
internal import Foundation
internal import Logging

extension AuthActor {
    /// A device login waiting for a person; the device code stays inside the polling task.
    struct DeviceFlow {
        let id: UInt64
        /// Nil while the device authorization request is in flight.
        var status: DeviceAuthorizationStatus?
        var task: Task<Void, Never>?
        /// The id of the ``SharedDeviceLogin`` this is, when the stores are shared.
        var shared: String?
    }

    /// Starts a device login (RFC 8628): asks the device authorization endpoint for a user
    /// code, publishes ``AuthEvent/deviceAuthorization(_:)`` and returns what a person needs
    /// (the user code and where to enter it). The token endpoint is then polled in the
    /// background, as ``DevicePolling`` decides; an approval logs the session in as any
    /// login does (tokens stored, ``AuthEvent/loggedIn(_:)``), and any other ending
    /// publishes ``AuthEvent/deviceLoginEnded(_:)``. The session, if logged in, keeps
    /// serving until the approval replaces it.
    ///
    /// Throws ``AuthError/deviceLoginPending`` when a device login is already waiting (one
    /// at a time: a second would invalidate the code someone may be typing), and
    /// ``AuthError/Code/loginFailed`` with the endpoint's error when the device
    /// authorization request fails, and ``AuthError/Code/sessionEnded`` (a logout someone
    /// asked for) when a logout cancelled it while that request was in flight. A logout
    /// someone asked for, or another login, cancels the pending login. The device code is
    /// never logged, published or returned.
    ///
    /// When other processes share the stores (a ``DeviceLoginCoordinator``), the device login
    /// is the session's: one that another process started and a person may still approve is
    /// adopted (its user code returned, announced and shown here, no new code asked for),
    /// a new one is shared, and the processes poll it in turn, one at a time. Throws the
    /// store's error (``AuthError/Code/unavailable``) when the shared login cannot be read or
    /// shared.
    public func startDeviceLogin(scope: String? = nil, subject: String? = nil) async throws -> DeviceAuthorizationStatus {
        guard deviceFlow == nil else { throw AuthError.deviceLoginPending }
        // The session the approval begins proves its own key, from the first poll on.
        let dpop = try keyForNewSession()
        nextDeviceFlowID += 1
        let id = nextDeviceFlowID
        deviceFlow = DeviceFlow(id: id)
        // With shared stores, the login another process started and a person may still
        // approve is this one too: one user code, whichever process is asked; and of
        // processes starting together, one asks for codes.
        var replacing: String?
        if let deviceCoordinator {
            switch try await claimSharedDeviceStart(id, coordinator: deviceCoordinator) {
            case .adopt(let login): return adoptSharedDeviceLogin(login, flowID: id, dpop: dpop, startedHere: false)
            case .replace(let previous): replacing = previous
            }
        }
        let authorization: DeviceAuthorization
        do {
            authorization = try await client.requestDeviceAuthorization(scope: scope)
        } catch {
            if deviceFlow?.id == id { deviceFlow = nil }
            // Another process may ask at once.
            if let deviceCoordinator { await deviceCoordinator.releaseDeviceStart(for: account) }
            if let endpoint = error as? AuthError, endpoint.code.domain == .tokenEndpoint {
                throw AuthError.loginFailed(endpoint)
            }
            throw error
        }
        // A logout someone asked for while the request was in flight cancelled this login.
        guard deviceFlow?.id == id else {
            if let deviceCoordinator { await deviceCoordinator.releaseDeviceStart(for: account) }
            throw AuthError.sessionEnded(.userInitiated)
        }
        let startedAt = clock.now
        let status = authorization.status(expiresAt: clock.wallNow.addingTimeInterval(authorization.expiresIn.timeInterval))
        if let deviceCoordinator {
            let login = SharedDeviceLogin(
                id: Self.newSharedDeviceLoginID(), deviceCode: authorization.deviceCode, status: status, subject: subject)
            let shared = try await shareDeviceLogin(login, replacing: replacing, flowID: id, coordinator: deviceCoordinator)
            guard deviceFlow?.id == id else {
                // A logout someone asked for while it was being shared: it ends everywhere.
                if shared.id == login.id {
                    await deviceCoordinator.endDeviceLogin(login.id, outcome: DeviceLoginEnd.cancelled.code, for: account)
                }
                throw AuthError.sessionEnded(.userInitiated)
            }
            return adoptSharedDeviceLogin(shared, flowID: id, dpop: dpop, startedHere: shared.id == login.id)
        }
        let polling = DevicePolling(interval: authorization.interval, expiresIn: authorization.expiresIn, startedAt: startedAt)
        deviceFlow?.status = status
        deviceFlow?.task = Task {
            await self.pollDevice(id, authorization.deviceCode, polling, subject: subject, dpop: dpop)
        }
        logger.info(
            "device login waiting for approval",
            metadata: [
                "auth.device.user_code": "\(status.userCode)", "auth.device.verification_uri": "\(status.verificationURI)",
                "auth.device.expires_in": "\(authorization.expiresIn)", "auth.device.interval": "\(authorization.interval)",
            ])
        events.publish(.deviceAuthorization(status), status: self.status)
        return status
    }

    /// Cancels the device login waiting for a person, if any
    /// (``DeviceLoginEnd/cancelled``). A poll in flight is dropped when it returns, even
    /// with tokens.
    public func cancelDeviceLogin() {
        guard let flow = deviceFlow else { return }
        deviceFlow = nil
        flow.task?.cancel()
        if flow.status != nil { endedDeviceLogin(.cancelled) }
    }

    /// Ends the device login waiting here, if any, because a login on another process that
    /// shares the stores replaced it (``DeviceLoginEnd/replaced``), as a login here does: its
    /// approval could only replace the session every process now serves.
    ///
    /// A shared device login that another process's approval ended ends here without an
    /// event: the login that replaced it is its own.
    func endDeviceLoginReplacedElsewhere() async {
        guard let flow = deviceFlow else { return }
        deviceFlow = nil
        flow.task?.cancel()
        guard flow.status != nil else { return }
        if let shared = flow.shared, let deviceCoordinator {
            let stored = try? await deviceCoordinator.sharedDeviceLogin(for: account)
            if let stored, stored.id == shared, let outcome = stored.outcome {
                endedSharedDeviceLogin(outcome)
                return
            }
            await deviceCoordinator.endDeviceLogin(shared, outcome: DeviceLoginEnd.replaced.code, for: account)
        }
        endedDeviceLogin(.replaced)
    }

    /// Publishes, logs and counts the end of a device login that did not log in.
    func endedDeviceLogin(_ end: DeviceLoginEnd) {
        logger.notice("device login ended", metadata: ["auth.device.end": "\(end.code)", "auth.device.detail": "\(end)"])
        countDevice("authgate_device_logins_total", "outcome", Self.outcome(of: end))
        events.publish(.deviceLoginEnded(end), status: status)
    }

    /// The `outcome` of a device login that ended without logging in: its code, but a
    /// server's refusal, whose codes are the server's, is `rejected` (a bounded label).
    static func outcome(of end: DeviceLoginEnd) -> String {
        if case .rejected = end { return "rejected" }
        return end.code
    }

    /// The `answer` of one poll: `issued`, `authorization_pending`, `slow_down`, `refused`
    /// (another OAuth error), `unavailable` (no usable answer; polled again) or `unusable`.
    static func answer(of outcome: DevicePolling.Outcome) -> String {
        switch outcome {
        case .issued: "issued"
        case .refused(let code) where code == "authorization_pending" || code == "slow_down": code
        case .refused: "refused"
        case .unavailable: "unavailable"
        case .unusable: "unusable"
        }
    }

    /// Counts one device login outcome (`authgate_device_logins_total{outcome}`: `approved`
    /// or an end's) or one poll (`authgate_device_polls_total{answer}`).
    func countDevice(_ label: String, _ dimension: String, _ value: String) {
        let key = label + " " + value
        if let counter = deviceCounters[key] {
            counter.increment()
            return
        }
        let counter = Counter(
            label: label, dimensions: [("session", account.rawValue), (dimension, value)], factory: metricsFactory)
        deviceCounters[key] = counter
        counter.increment()
    }

    /// Polls the token endpoint with `deviceCode` until ``DevicePolling`` says stop, while
    /// the device login `id` is still the pending one.
    private func pollDevice(
        _ id: UInt64, _ deviceCode: String, _ polling: DevicePolling, subject: String?, dpop: DPoPSessionKey?
    ) async {
        var polling = polling
        var action = polling.start(now: clock.now)
        while case .poll(let wait) = action {
            do { try await clock.sleep(for: wait) } catch { return }
            guard deviceFlow?.id == id, !Task.isCancelled else { return }
            guard let next = await pollDeviceOnce(id, deviceCode, &polling, subject: subject, dpop: dpop) else { return }
            action = next
            guard deviceFlow?.id == id else { return }
        }
        guard deviceFlow?.id == id, case .fail(let end) = action else { return }
        deviceFlow = nil
        endedDeviceLogin(end)
    }

    /// Polls the token endpoint once with `deviceCode` for the device login `id` and
    /// returns what ``DevicePolling`` says next (``DevicePolling/Action/succeed`` once the
    /// session is logged in); nil when the login was cancelled meanwhile. For a shared login
    /// (`shared`), an approval is recorded as its outcome before the tokens are stored, so
    /// that the processes that adopt the login know it was this one.
    func pollDeviceOnce(
        _ id: UInt64, _ deviceCode: String, _ polling: inout DevicePolling, subject: String?, dpop: DPoPSessionKey?,
        shared: String? = nil
    ) async -> DevicePolling.Action? {
        let requestedAt = (clock.now, clock.wallNow)
        let certificate = configuration.shownCertificate?()
        let action: DevicePolling.Action
        do {
            let response = try await client.requestToken(.deviceCode(deviceCode), dpop: dpop)
            countDevice("authgate_device_polls_total", "answer", Self.answer(of: .issued))
            if let shared, let deviceCoordinator {
                await deviceCoordinator.endDeviceLogin(shared, outcome: SharedDeviceLogin.approved, for: account)
            }
            _ = try await install(
                response, grantType: Grant.deviceCodeType, subject: subject, requestedAt: requestedAt, dpop: dpop,
                certificate: certificate, deviceFlowID: id)
            countDevice("authgate_device_logins_total", "outcome", "approved")
            return .succeed
        } catch is CancellationError {
            return nil
        } catch let error as AuthError where error.code.domain == .tokenEndpoint {
            countDevice("authgate_device_polls_total", "answer", Self.answer(of: DevicePolling.outcome(of: error)))
            action = polling.next(after: DevicePolling.outcome(of: error), now: clock.now)
            if case .poll = action, case .unavailable = DevicePolling.outcome(of: error) {
                logger.notice(
                    "device login poll failed; polling again", metadata: ["auth.error": "\(error)"])
            }
        } catch {
            // The tokens were issued, and could not be stored.
            logger.error("device login approved, but the tokens could not be stored", metadata: ["error": "\(error)"])
            action = .fail(.storeFailed)
        }
        if deviceFlow?.id == id, deviceFlow?.status?.interval != polling.interval {
            deviceFlow?.status?.interval = polling.interval
        }
        return action
    }
}
