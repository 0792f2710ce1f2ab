package medallion.sources;

import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

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
 * more. Read ahead, the query and the conversion run while Spark plans, and the task only hands the rows on. On
 * two busy cores the two slow each other: about 20 % off the update (bench/README.md, session 20).
 *
 * <p>Bounds: only a batch read as one range is read ahead (a large batch read in several ranges is bound by the
 * read itself, and would hold one driver connection per range); at most {@code fetchSize} rows are held, the rest
 * of the range stays in the open cursor, which the task reads on. A read ahead no task claimed (the query
 * stopped, the batch never read its input, or the task ran elsewhere) is dropped by the stream at its next offset
 * or its stop, or after {@value #UNCLAIMED_SECONDS} s: its running statement is cancelled and its connection
 * closed or given back. A task that finds none (dropped, or claimed by an earlier attempt) reads its range
 * itself. A failure of the read ahead is the task's failure, as its own read's would be: the same
 * {@link SourceException}.
 */
final class ReadAhead {
  static final int UNCLAIMED_SECONDS = 10;
  private static final Map<String, ReadAhead> WAITING = new ConcurrentHashMap<>();
  private static final ExecutorService THREADS = Executors.newCachedThreadPool(daemon("medallion-jdbc-read-ahead"));
  private static final ScheduledExecutorService EXPIRY =
      Executors.newSingleThreadScheduledExecutor(daemon("medallion-jdbc-read-ahead-expiry"));

  /** Reads ahead started, claimed by their task and dropped unclaimed, in this JVM (for tests and diagnosis). */
  static final AtomicLong STARTED = new AtomicLong();
  static final AtomicLong CLAIMED = new AtomicLong();
  static final AtomicLong DROPPED = new AtomicLong();

  final String token = UUID.randomUUID().toString();
  private final String relation;
  private volatile CompletableFuture<Rows> rows; // null once claimed or dropped: no one else holds the rows
  private Statement running; // guarded by this: the read's statement while this read ahead owns its connection
  private volatile boolean dropped;

  private ReadAhead(ReadPlan plan, String sql) {
    relation = plan.options.shortRelation();
    rows = CompletableFuture.supplyAsync(() -> read(plan, sql), THREADS);
  }

  private static ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
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
    EXPIRY.schedule(ahead::drop, UNCLAIMED_SECONDS, TimeUnit.SECONDS);
    return ahead;
  }

  /** The rows read ahead under {@code token} for the calling task, or null when there are none (any more). */
  static PartitionReader<InternalRow> claim(String token) {
    ReadAhead ahead = token == null ? null : WAITING.remove(token);
    if (ahead == null) {
      return null;
    }
    CLAIMED.incrementAndGet();
    CompletableFuture<Rows> result = ahead.rows;
    ahead.rows = null;
    try {
      return result.get().reader();
    } catch (InterruptedException e) { // the task was killed while the read went on
      Thread.currentThread().interrupt();
      ahead.abandon(result);
      throw new IllegalStateException("interrupted while reading " + ahead.relation, e);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException) {
        throw (RuntimeException) cause;
      }
      if (cause instanceof Error) {
        throw (Error) cause;
      }
      throw new IllegalStateException(cause);
    }
  }

  /** Close an unclaimed read ahead: cancel its statement, and close its rows when its read ends. */
  void drop() {
    if (WAITING.remove(token, this)) {
      DROPPED.incrementAndGet();
      abandon(rows);
      rows = null;
    }
  }

  private void abandon(CompletableFuture<Rows> result) {
    synchronized (this) {
      dropped = true;
      if (running != null) {
        try {
          running.cancel();
        } catch (SQLException e) {
          // the connection broke: the read fails and closes it
        }
      }
    }
    result.thenAccept(Rows::close);
  }

  private synchronized void running(Statement statement) {
    running = statement;
  }

  /** This read ahead stops owning its connection (given back or closed next): no cancel may reach it. */
  private synchronized void release() {
    running = null;
  }

  private Rows read(ReadPlan plan, String sql) {
    RangeRead.Reader reader = new RangeRead.Reader(plan, sql, this::running);
    List<InternalRow> head = new ArrayList<>();
    boolean more = true;
    try {
      while (head.size() < plan.options.fetchSize && !dropped && (more = reader.next())) {
        head.add(reader.get().copy()); // the conversion reuses its row
      }
    } catch (Throwable e) {
      release();
      reader.close();
      throw e;
    }
    if (!more) { // the whole range is held: its connection goes back to the pool now
      release();
      reader.close();
    }
    return new Rows(head, more ? reader : null);
  }

  /** The first rows of a range and the reader of the rest (null: the range had no more). */
  private record Rows(List<InternalRow> head, RangeRead.Reader rest) {
    void close() {
      if (rest != null) {
        rest.close();
      }
    }

    PartitionReader<InternalRow> reader() {
      return new Handed(head.iterator(), rest);
    }
  }

  /** What the task reads: the rows held, then the rest of the cursor. */
  private static final class Handed implements PartitionReader<InternalRow> {
    private Iterator<InternalRow> head; // null once every held row was handed on
    private final RangeRead.Reader rest;
    private InternalRow current;

    Handed(Iterator<InternalRow> head, RangeRead.Reader rest) {
      this.head = head;
      this.rest = rest;
    }

    @Override
    public boolean next() {
      if (head != null && head.hasNext()) {
        current = head.next();
        return true;
      }
      head = null;
      if (rest != null && rest.next()) {
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
      head = null;
      if (rest != null) {
        rest.close();
      }
    }
  }
}
