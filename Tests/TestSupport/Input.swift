public import Testing

/// A named input for a parameterized test: the test report shows the name, not
/// the value (a 1 MB argument would otherwise be printed whole).
public struct Input<Value: Sendable>: Sendable, CustomTestStringConvertible {
    /// What the report shows.
    public var name: String
    /// What the test gets.
    public var value: Value
    /// A fragment the error message must contain, when one is meaningful.
    public var says: String?

    /// An input named `name`.
    public init(_ name: String, _ value: Value, says: String? = nil) {
        self.name = name
        self.value = value
        self.says = says
    }

    /// The name.
    public var testDescription: String { name }
}
