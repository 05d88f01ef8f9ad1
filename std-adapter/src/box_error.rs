//! The workspace's one boxed error type.

/// A boxed error: any `std::error::Error` that is `Send + Sync` (strings
/// convert too). What an initialiser returns, and the error of
/// bulkhead-tokio's tower services (tower's usual boxed error); the one
/// such type of the workspace.
///
/// ```
/// use bulkhead_std::BoxError;
///
/// let from_io: BoxError = std::io::Error::other("refused").into();
/// let from_str: BoxError = "refused".into();
/// assert_eq!(from_io.to_string(), from_str.to_string());
/// ```
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;
