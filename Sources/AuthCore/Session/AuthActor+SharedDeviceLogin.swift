internal import Foundation
internal import Logging

extension AuthActor {
    /// What a device login starting here does with the one shared in the stores.
    enum SharedDeviceLoginStart {
        /// A person may still approve the shared one: show and poll it.
        case adopt(SharedDeviceLogin)
        /// Ask for new codes and share them in place of this one (nil: none is shared).
        case replace(String?)
    }

    /// Reads the shared device login for the device login `flowID` starting here. Throws
    /// the store's error, or ``AuthError/Code/sessionEnded`` when a logout cancelled the
    /// login meanwhile.
    func sharedDeviceLoginToAdopt(_ flowID: UInt64, coordinator: any DeviceLoginCoordinator) async throws
        -> SharedDeviceLoginStart
    {
        let found: SharedDeviceLogin?
        do {
            found = try await coordinator.sharedDeviceLogin(for: account)
        } catch {
            if deviceFlow?.id == flowID { deviceFlow = nil }
            throw error
        }
        guard deviceFlow?.id == flowID else { throw AuthError.sessionEnded(.userInitiated) }
        if let found, found.isWaiting(at: clock.wallNow) { return .adopt(found) }
        return .replace(found?.id)
    }

    /// Reads the shared device login for the device login `flowID` starting here and, when
    /// none waits, claims the start of a new one: while another process is asking for codes,
    /// this one waits for them (each wait at most that claim's term) and adopts them. After
    /// a bounded number of rounds it asks anyway (sharing then decides which codes are shown).
    func claimSharedDeviceStart(_ flowID: UInt64, coordinator: any DeviceLoginCoordinator) async throws
        -> SharedDeviceLoginStart
    {
        for _ in 0..<20 {
            let found = try await sharedDeviceLoginToAdopt(flowID, coordinator: coordinator)
            guard case .replace(let previous) = found else { return found }
            let claim: DeviceStartClaim
            do {
                claim = try await coordinator.claimDeviceStart(replacing: previous, for: account)
            } catch {
                if deviceFlow?.id == flowID { deviceFlow = nil }
                throw error
            }
            guard deviceFlow?.id == flowID else { throw AuthError.sessionEnded(.userInitiated) }
            switch claim {
            case .start: return found
            case .changed: continue
            case .wait(let atMost): await coordinator.waitForDeviceChange(for: account, atMost: atMost)
            }
        }
        return try await sharedDeviceLoginToAdopt(flowID, coordinator: coordinator)
    }

    /// Shares `login` (just issued here) in place of `replacing`; when another process
    /// shared one first, that one is answered and `login`'s codes are left to expire unused.
    func shareDeviceLogin(
        _ login: SharedDeviceLogin, replacing: String?, flowID: UInt64, coordinator: any DeviceLoginCoordinator
    ) async throws -> SharedDeviceLogin {
        var replacing = replacing
        do {
            // Each lost compare-and-set means another process shared one meanwhile: at most
            // a few, since a login shared by another is adopted while it waits.
            for _ in 0..<3 {
                if try await coordinator.shareDeviceLogin(login, replacing: replacing, for: account) { return login }
                switch try await sharedDeviceLoginToAdopt(flowID, coordinator: coordinator) {
                case .adopt(let theirs): return theirs
                case .replace(let previous): replacing = previous
                }
            }
            throw AuthError.store(
                .unavailable, .tokens, account: account, message: "the shared device login kept changing")
        } catch {
            if deviceFlow?.id == flowID { deviceFlow = nil }
            throw error
        }
    }

    /// Makes `login` the device login `flowID` waiting here: shown by ``status``, announced,
    /// logged (its user code, never its device code) and polled in turn with the other
    /// processes.
    func adoptSharedDeviceLogin(
        _ login: SharedDeviceLogin, flowID: UInt64, dpop: DPoPSessionKey?, startedHere: Bool
    ) -> DeviceAuthorizationStatus {
        deviceFlow?.status = login.status
        deviceFlow?.shared = login.id
        if let coordinator = deviceCoordinator {
            deviceFlow?.task = Task { await self.pollSharedDevice(flowID, login, dpop: dpop, coordinator: coordinator) }
        }
        logger.info(
            startedHere ? "device login waiting for approval" : "device login waiting for approval, started on another replica",
            metadata: [
                "auth.device.user_code": "\(login.status.userCode)",
                "auth.device.verification_uri": "\(login.status.verificationURI)",
                "auth.device.expires_at": "\(login.status.expiresAt)", "auth.device.interval": "\(login.status.interval)",
                "auth.device.shared": "\(login.id)",
            ])
        events.publish(.deviceAuthorization(login.status), status: status)
        return login.status
    }

    /// A new id for a shared device login.
    static func newSharedDeviceLoginID() -> String {
        String(UInt64.random(in: 1...UInt64.max), radix: 16)
    }

    /// Polls the shared device login `login` as the device login `flowID` waiting here,
    /// in turn with the other processes: before each poll, the polling lease
    /// (``DeviceLoginCoordinator/claimDevicePolling(_:for:)``); while another process holds
    /// it, this one waits, and takes over when that one stops. ``DevicePolling`` decides
    /// the schedule as for a login of one process, at the interval the polling processes
    /// reached. A process that takes the lease over after waiting holds it a whole interval
    /// before it polls: the last poll came before the takeover, but at any time during the
    /// wait, so polling at once could come sooner than the interval after it (`slow_down`).
    func pollSharedDevice(
        _ flowID: UInt64, _ login: SharedDeviceLogin, dpop: DPoPSessionKey?, coordinator: any DeviceLoginCoordinator
    ) async {
        let left = max(login.status.expiresAt.timeIntervalSince(clock.wallNow), 0)
        var polling = DevicePolling(
            interval: login.status.interval, expiresIn: .milliseconds(Int64(left * 1000)), startedAt: clock.now)
        var action = polling.start(now: clock.now)
        // Whether another process held the lease at this one's last claim.
        var waited = false
        while case .poll(let wait) = action {
            do { try await clock.sleep(for: wait) } catch { return }
            guard deviceFlow?.id == flowID, !Task.isCancelled else { return }
            let claim: DevicePollClaim
            do {
                claim = try await coordinator.claimDevicePolling(login.id, for: account)
            } catch {
                // No poll without the lease: asked again after a backoff.
                logger.notice("device login polling lease not reachable; trying again", metadata: ["auth.error": "\(error)"])
                action = polling.next(after: .unavailable(retryAfter: nil), now: clock.now)
                continue
            }
            guard deviceFlow?.id == flowID, !Task.isCancelled else { return }
            switch claim {
            case .ended(let outcome):
                deviceFlow = nil
                endedSharedDeviceLogin(outcome ?? DeviceLoginEnd.replaced.code)
                return
            case .wait(let atMost):
                waited = true
                await coordinator.waitForDeviceChange(for: account, atMost: atMost)
                guard deviceFlow?.id == flowID, !Task.isCancelled else { return }
                action = polling.start(now: clock.now)
            case .poll(let interval):
                polling.adopt(interval: interval)
                if waited {
                    waited = false
                    action = polling.start(now: clock.now)
                    continue
                }
                let before = polling.interval
                guard
                    let next = await pollDeviceOnce(
                        flowID, login.deviceCode, &polling, subject: login.subject, dpop: dpop, shared: login.id)
                else { return }
                action = next
                if polling.interval != before {
                    await coordinator.recordDeviceInterval(polling.interval, of: login.id, for: account)
                }
            }
            guard deviceFlow?.id == flowID else { return }
        }
        guard deviceFlow?.id == flowID, case .fail(let end) = action else { return }
        deviceFlow = nil
        await coordinator.endDeviceLogin(login.id, outcome: end.code, for: account)
        endedDeviceLogin(end)
    }

    /// The end here of a shared device login that ended elsewhere with `outcome`: an
    /// approval is the login another process makes (no end is published), any other
    /// outcome ends it here as there.
    func endedSharedDeviceLogin(_ outcome: String) {
        if outcome == SharedDeviceLogin.approved {
            logger.info("device login approved on another replica")
        } else {
            endedDeviceLogin(DeviceLoginEnd(code: outcome))
        }
    }

    /// Cancels the device login waiting here for a logout someone asked for: a shared one
    /// ends for every process (``DeviceLoginEnd/cancelled``), also when this process never
    /// showed it (a replica without `autoLogin: device` asked to log out must not let an
    /// approval log everyone in after the logout).
    func cancelDeviceLoginEverywhere() async {
        let shown = deviceFlow?.shared
        cancelDeviceLogin()
        guard let deviceCoordinator else { return }
        var shared = shown
        if shared == nil {
            do {
                shared = try await deviceCoordinator.sharedDeviceLogin(for: account)?.id
            } catch {
                logger.warning(
                    "the shared device login could not be read to cancel it", metadata: ["store.error": "\(error)"])
            }
        }
        if let shared {
            await deviceCoordinator.endDeviceLogin(shared, outcome: DeviceLoginEnd.cancelled.code, for: account)
        }
    }
}
