package medallion.sources;

import java.sql.SQLException;

/**
 * A failure of the {@code jdbc_incremental} source, named after the Python source's errors so that a summary reads
 * the same whichever implementation ran: {@link Connection} when the database cannot be reached or the connection
 * dropped (SQLSTATE class 08, or 57P: the server shut the session down), {@link Query} when it refused a statement.
 * Messages name the relation and never hold the password.
 */
public class SourceException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  SourceException(String message) {
    super(message, null, false, false);
  }

  /** The error code the framework reports (as the Python source's errors), read as a Spark error condition. */
  public String getCondition() {
    return "DATABASE_SOURCE_ERROR";
  }

  /** The database could not be reached, or the connection dropped during a read (retryable). */
  public static final class Connection extends SourceException {
    private static final long serialVersionUID = 1L;

    Connection(String message) {
      super(message);
    }

    @Override
    public String getCondition() {
      return "SOURCE_CONNECTION_FAILED";
    }
  }

  /** The database refused a statement (unknown table or column, bad SQL, a value that does not fit). */
  public static final class Query extends SourceException {
    private static final long serialVersionUID = 1L;

    Query(String message) {
      super(message);
    }

    @Override
    public String getCondition() {
      return "SOURCE_QUERY_FAILED";
    }
  }

  /** Options that cannot be read, or a column without a Spark type. */
  public static final class Options extends SourceException {
    private static final long serialVersionUID = 1L;

    Options(String message) {
      super(message);
    }

    @Override
    public String getCondition() {
      return "INVALID_SOURCE_OPTIONS";
    }
  }

  /** {@code error} while doing {@code action}, classified by its SQLSTATE, with {@code secret} scrubbed. */
  static SourceException of(SQLException error, String action, IncrementalOptions options) {
    String state = error.getSQLState() == null ? "" : error.getSQLState();
    String text = options.scrub(String.valueOf(error.getMessage()));
    if (state.startsWith("08") || state.startsWith("57P")) {
      return new Connection("could not " + action + " at " + options.endpoint() + ": " + text);
    }
    return new Query("PostgreSQL refused to " + action + ": " + text);
  }
}
