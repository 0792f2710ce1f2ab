package medallion.sources;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.function.Consumer;

import org.apache.spark.executor.InputMetrics;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.jdbc.JdbcUtils$;
import org.apache.spark.sql.jdbc.JdbcDialects;
import org.apache.spark.sql.types.StructType;

import scala.Option;

/**
 * The read of one range in a task: a cursor ({@code fetchSize} rows per round trip) whose rows Spark's own JDBC
 * conversion turns into Spark rows, as {@code spark.read.jdbc} does.
 */
final class RangeRead {
  private RangeRead() {}

  /** One range of one batch: the SQL that reads it, and the token of its {@link ReadAhead} (null: none). */
  static final class Partition implements InputPartition {
    private static final long serialVersionUID = 1L;
    final String sql;
    final String readAhead;

    Partition(String sql) {
      this(sql, null);
    }

    Partition(String sql, String readAhead) {
      this.sql = sql;
      this.readAhead = readAhead;
    }
  }

  /** Opens a {@link Reader} per partition. */
  static final class Factory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;
    private final ReadPlan plan;

    Factory(ReadPlan plan) {
      this.plan = plan;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      Partition range = (Partition) partition;
      PartitionReader<InternalRow> ahead = ReadAhead.claim(range.readAhead);
      return ahead != null ? ahead : new Reader(plan, range.sql);
    }
  }

  /** The rows of one range. */
  static final class Reader implements PartitionReader<InternalRow> {
    private final IncrementalOptions options;
    private final Connection conn;
    private final Statement statement;
    private final scala.collection.Iterator<InternalRow> rows;
    private InternalRow current;
    private boolean finished;
    private boolean failed;
    private boolean closed;

    Reader(ReadPlan plan, String sql) {
      this(plan, sql, st -> { });
    }

    /** A reader that hands its statement to {@code running} before executing it (to be cancelled). */
    Reader(ReadPlan plan, String sql, Consumer<Statement> running) {
      options = plan.options;
      conn = ConnectionPool.borrow(options);
      try {
        conn.setAutoCommit(false); // the driver streams through a cursor only inside a transaction
        statement = conn.createStatement();
        statement.setFetchSize(options.fetchSize);
        running.accept(statement);
        ResultSet rs = statement.executeQuery(sql);
        StructType schema = plan.schema();
        // metrics of its own: Spark's DataSourceRDD counts the task's records read from what this reader returns
        rows = JdbcUtils$.MODULE$.resultSetToSparkInternalRows(rs, JdbcDialects.get(options.url), schema,
            new InputMetrics(), Option.empty());
      } catch (SQLException e) {
        ConnectionPool.discard(conn);
        throw SourceException.of(e, "read " + options.shortRelation(), options);
      }
    }

    @Override
    public boolean next() {
      try {
        if (!rows.hasNext()) {
          finished = true;
          return false;
        }
        current = rows.next();
        return true;
      } catch (Exception e) { // Scala code throws the driver's SQLException undeclared
        failed = true;
        throw translated(e);
      }
    }

    private RuntimeException translated(Exception e) {
      for (Throwable t = e; t != null; t = t.getCause()) {
        if (t instanceof SQLException) {
          return SourceException.of((SQLException) t, "read " + options.shortRelation(), options);
        }
      }
      return e instanceof RuntimeException ? (RuntimeException) e : new RuntimeException(e);
    }

    @Override
    public InternalRow get() {
      return current;
    }

    @Override
    public void close() {
      if (closed) {
        return;
      }
      closed = true;
      if (finished && !failed) {
        ConnectionPool.giveBack(options, conn); // rolls the read's transaction back, closing its cursor
      } else {
        ConnectionPool.discard(conn); // a read stopped early or cut: its cursor and state go with it
      }
    }
  }
}
