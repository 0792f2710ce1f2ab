package medallion.sources;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.spark.TaskContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.PartitionReader;

/**
 * The read of a micro-batch's only range, started on the driver as soon as {@code latestOffset} knows the range,
 * and handed to the batch's task when it starts (local mode: the task runs in this JVM).
 *
 * <p>Why: an incremental update's database read waited for Spark's own work before it began. Timed inside a warm
 * session (1M-row table, 10,000 rows changed, every 100th): {@code latestOffset} returned 32 ms into the update,
 * the task started at 66 ms (offset log, planning, job scheduling), the range query took 30 ms in PostgreSQL
 * (10,000 heap pages, hint bits set by the first read after the {@code UPDATE}) and Spark's row conversion 7 ms
 * more. Read ahead, the query and the conversion run while Spark plans, and the task only hands the rows on.
 *
 * <p>Bounds: only a batch read as one range is read ahead (a large batch read in several ranges is bound by the
 * read itself, and would hold one driver connection per range); at most {@code fetchSize} rows are held, the rest
 * of the range stays in the open cursor, which the task reads on. A read ahead no task claimed (the query
 * stopped, or the task ran elsewhere) is dropped by the stream at its next offset or its stop and closes its
 * connection; a task retried after it claimed one reads its range again itself. A failure of the read ahead is
 * the task's failure, as its own read's would be: the same {@link SourceException}.
 */
final class ReadAhead {
  private static final Map<String, ReadAhead> WAITING = new ConcurrentHashMap<>();
  private static final ExecutorService THREADS = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "medallion-jdbc-read-ahead");
    t.setDaemon(true);
    return t;
  });

  /** Reads ahead started, claimed by their task and dropped unclaimed, in this JVM (for tests and diagnosis). */
  static final AtomicLong STARTED = new AtomicLong();
  static final AtomicLong CLAIMED = new AtomicLong();
  static final AtomicLong DROPPED = new AtomicLong();

  final String token = UUID.randomUUID().toString();
  private final CompletableFuture<Rows> rows;

  private ReadAhead(ReadPlan plan, String sql) {
    rows = CompletableFuture.supplyAsync(() -> Rows.read(plan, sql), THREADS);
  }

  /** Whether a read started here can reach the batch's task: the session runs in local mode. */
  static boolean possible() {
    try {
      return SparkSession.active().sparkContext().isLocal();
    } catch (IllegalStateException e) { // no active session: nothing to plan a task in
      return false;
    }
  }

  /** Start reading {@code sql} (the range of {@code plan}); claimed by its {@link #token}. */
  static ReadAhead start(ReadPlan plan, String sql) {
    ReadAhead ahead = new ReadAhead(plan, sql);
    WAITING.put(ahead.token, ahead);
    STARTED.incrementAndGet();
    return ahead;
  }

  /** The rows read ahead under {@code token} for the calling task, or null when there are none (any more). */
  static PartitionReader<InternalRow> claim(String token) {
    ReadAhead ahead = token == null ? null : WAITING.remove(token);
    if (ahead == null) {
      return null;
    }
    CLAIMED.incrementAndGet();
    try {
      return ahead.rows.join().reader();
    } catch (CompletionException e) {
      throw e.getCause() instanceof RuntimeException ? (RuntimeException) e.getCause() : e;
    }
  }

  /** Close an unclaimed read ahead (now, or when its read ends). */
  void drop() {
    if (WAITING.remove(token, this)) {
      DROPPED.incrementAndGet();
      rows.thenAccept(Rows::close);
    }
  }

  /**
   * The first rows of a range (copied out of the conversion's reused row) and the reader of the rest, closed
   * already (its connection back in the pool) when the range had no more.
   */
  private record Rows(List<InternalRow> head, RangeRead.Reader rest) {
    static Rows read(ReadPlan plan, String sql) {
      RangeRead.Reader reader = new RangeRead.Reader(plan, sql);
      List<InternalRow> head = new ArrayList<>();
      try {
        boolean more = true;
        while (head.size() < plan.options.fetchSize && (more = reader.next())) {
          head.add(reader.get().copy());
        }
        if (!more) {
          reader.close();
        }
      } catch (RuntimeException e) {
        reader.close();
        throw e;
      }
      return new Rows(head, reader);
    }

    void close() {
      rest.close();
    }

    PartitionReader<InternalRow> reader() {
      return new Handed(head.iterator(), rest);
    }
  }

  /** What the task reads: the rows held, then the rest of the cursor. */
  private static final class Handed implements PartitionReader<InternalRow> {
    private final Iterator<InternalRow> head;
    private final RangeRead.Reader rest;
    private InternalRow current;
    private boolean closed;

    Handed(Iterator<InternalRow> head, RangeRead.Reader rest) {
      this.head = head;
      this.rest = rest;
    }

    @Override
    public boolean next() {
      if (head.hasNext()) {
        current = head.next();
        return true;
      }
      if (!rest.isClosed() && rest.next()) {
        current = rest.get();
        return true;
      }
      return false;
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
      rest.close();
      TaskContext task = TaskContext.get();
      if (task != null) { // the rows counted by the read ahead's own metrics, now the task's
        task.taskMetrics().inputMetrics().incRecordsRead(rest.recordsRead());
      }
    }
  }
}
