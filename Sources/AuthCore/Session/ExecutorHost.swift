/// An empty default actor whose executor an ``AuthActor`` borrows when no custom executor
/// is given (an actor that declares `unownedExecutor` has no default executor of its own;
/// returning another actor's is the supported way to get one).
actor ExecutorHost {}
