/// Marks the task that performs an ``AuthActor``'s refresh request, so a transport that
/// calls back into the same actor (Alamofire#3509, okhttp#6747: the refresh call itself
/// intercepted) gets ``AuthError/Code/refreshReentered`` instead of a deadlock.
enum RefreshTaskMarker {
    /// The actor whose refresh the current task performs.
    @TaskLocal static var actor: ObjectIdentifier?
}
