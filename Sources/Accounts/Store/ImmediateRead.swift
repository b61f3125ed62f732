/// What a store read at once on the calling thread, or that it cannot read that way.
///
/// SQLite reads on reader connections synchronously, in microseconds. In serve, every `await` of an async store method
/// costs executor switches on the event loop, several per request on the session check. PostgreSQL answers over the
/// network and says ``mustWait`` for any read it would have to make.
public enum ImmediateRead<Value> {
    /// The value read.
    case read(Value)
    /// The store reads only asynchronously: await the async method instead.
    case mustWait
}
