package medallion.sources;

import java.sql.SQLException;

/**
 * A failure of the {@code jdbc_incremental} source, with the error code of the Python source's errors (read by the
 * framework as a Spark error condition) so that a summary reads the same whichever implementation ran:
 * {@code SOURCE_CONNECTION_FAILED} when the database cannot be reached or the connection dropped (SQLSTATE class
 * 08, or 57P: the server shut the session down), {@code SOURCE_QUERY_FAILED} when it refused a statement,
 * {@code INVALID_SOURCE_OPTIONS} for options it cannot run with or a column without a Spark type. Messages name
 * the relation and never hold the password.
 */
public final class SourceException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final String code;

  private SourceException(String code, String message) {
    super(message, null, false, false);
    this.code = code;
  }

  /** The error code (as the Python source's errors). */
  public String getCondition() {
    return code;
  }

  static SourceException options(String message) {
    return new SourceException("INVALID_SOURCE_OPTIONS", message);
  }

  static SourceException query(String message) {
    return new SourceException("SOURCE_QUERY_FAILED", message);
  }

  /** {@code error} while doing {@code action}, classified by its SQLSTATE, with the password scrubbed. */
  static SourceException of(SQLException error, String action, IncrementalOptions options) {
    String state = error.getSQLState() == null ? "" : error.getSQLState();
    String text = options.scrub(String.valueOf(error.getMessage()));
    if (state.startsWith("08") || state.startsWith("57P")) {
      return new SourceException("SOURCE_CONNECTION_FAILED",
          "could not " + action + " at " + options.endpoint() + ": " + text);
    }
    return query("PostgreSQL refused to " + action + ": " + text);
  }
}
