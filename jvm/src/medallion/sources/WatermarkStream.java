package medallion.sources;

import java.sql.Connection;
import java.util.List;

import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxRows;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;

/**
 * The streaming side, as the Python source's {@code JdbcIncrementalStreamReader}: the offset is the watermark and
 * the transactions in flight at the offset query ({@link InFlight}); {@code latestOffset} returns the start
 * unchanged when nothing is new and none of its transactions ended (no empty batch runs); a batch reads
 * {@code (start - lookback, end]} without the rows of transactions in flight at the end, and the rows of those in
 * flight at the start that ended; with {@code Trigger.AvailableNow} the end is capped at the greatest watermark
 * seen when the query started. The driver holds one pooled connection for the offset queries while the query runs.
 * A batch's ranges are planned in {@code latestOffset}, and in local mode a batch of one range starts reading there
 * on another pooled connection ({@link ReadAhead}), while Spark logs the offsets and plans the batch.
 */
final class WatermarkStream implements MicroBatchStream, SupportsTriggerAvailableNow {
  private final ReadPlan plan;
  private Connection conn;
  private String target;
  private boolean capped;
  private Planned planned; // the ranges of the batch latestOffset last returned

  /** The ranges of the batch {@code start -> end} (offsets' JSON), and the read ahead of its only range (or null). */
  private record Planned(String start, String end, RangeRead.Partition[] ranges, ReadAhead ahead) {
    void drop() {
      if (ahead != null) {
        ahead.drop();
      }
    }
  }

  WatermarkStream(ReadPlan plan) {
    this.plan = plan;
  }

  private synchronized <T> T withConnection(java.util.function.Function<Connection, T> action) {
    if (conn == null) {
      conn = ConnectionPool.borrow(plan.options);
    }
    try {
      return action.apply(conn);
    } catch (RuntimeException e) {
      ConnectionPool.discard(conn); // the next call takes another
      conn = null;
      throw e;
    }
  }

  private String scalar(String sql) {
    return withConnection(c -> Pg.scalar(c, plan.options, sql));
  }

  @Override
  public Offset initialOffset() {
    return new WatermarkOffset(plan.startingWatermark, 0);
  }

  @Override
  public ReadLimit getDefaultReadLimit() {
    long rows = plan.options.maxRowsPerBatch;
    return rows > 0 ? ReadLimit.maxRows(rows) : ReadLimit.allAvailable();
  }

  @Override
  public void prepareForTriggerAvailableNow() {
    target = scalar(Pg.maxWatermarkSql(plan.options.relation, plan.watermark, null, null, 0));
    capped = true;
  }

  @Override
  public Offset latestOffset() {
    throw new UnsupportedOperationException("latestOffset(start, limit) is used: the source admits rows by limit");
  }

  /** The end of the next batch; its ranges are planned here, and a batch of one range starts reading. */
  @Override
  public synchronized Offset latestOffset(Offset startOffset, ReadLimit limit) {
    WatermarkOffset start = (WatermarkOffset) startOffset;
    dropPlanned(); // a batch planned before ran already, or never will
    boolean reached = capped && (target == null || target.equals(start.watermark));
    if (reached && start.inFlight.isEmpty()) {
      return start; // nothing up to the cap, or read up to it already, and nothing left in flight: no query
    }
    long maxRows = limit instanceof ReadMaxRows ? ((ReadMaxRows) limit).maxRows() : 0;
    String bound = reached ? null
        : Pg.maxWatermarkSql(plan.options.relation, plan.watermark, start.watermark, target, maxRows);
    String end;
    List<Long> now = List.of();
    if (!plan.tracksTransactions) {
      end = bound == null ? null : scalar(bound);
    } else { // the end and the transactions in flight, from one statement's snapshot
      String[] row = withConnection(c -> Pg.row(c, plan.options, Pg.offsetSql(bound)));
      end = row == null ? null : row[0];
      now = row == null ? List.of() : InFlight.inFlight(row[1], row[2]);
    }
    if (end == null) {
      if (InFlight.ended(start.inFlight, List.of(new InFlight.Group(null, now))).isEmpty()) {
        return start;
      }
      end = start.watermark;
    }
    String nulls = scalar(Pg.nullCountSql(plan.options.relation, plan.watermark));
    WatermarkOffset next = new WatermarkOffset(end, nulls == null ? 0 : Long.parseLong(nulls),
        InFlight.carried(start.inFlight, start.watermark, now));
    planned = plan(start, next);
    return next;
  }

  private Planned plan(WatermarkOffset start, WatermarkOffset end) {
    RangeRead.Partition[] ranges = withConnection(c -> plan.batch(c, start, end));
    if (ranges.length != 1 || !ReadAhead.possible()) {
      return new Planned(start.json(), end.json(), ranges, null);
    }
    ReadAhead ahead = ReadAhead.start(plan, ranges[0].sql);
    RangeRead.Partition[] read = {new RangeRead.Partition(ranges[0].sql, ahead.token)};
    return new Planned(start.json(), end.json(), read, ahead);
  }

  private void dropPlanned() {
    if (planned != null) {
      planned.drop();
      planned = null;
    }
  }

  /** The ranges latestOffset planned for this batch; planned again for any other (a batch logged before a restart). */
  @Override
  public synchronized InputPartition[] planInputPartitions(Offset startOffset, Offset endOffset) {
    WatermarkOffset start = (WatermarkOffset) startOffset;
    WatermarkOffset end = (WatermarkOffset) endOffset;
    if (planned != null && planned.start.equals(start.json()) && planned.end.equals(end.json())) {
      return planned.ranges;
    }
    return withConnection(c -> plan.batch(c, start, end));
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new RangeRead.Factory(plan);
  }

  @Override
  public Offset deserializeOffset(String json) {
    return WatermarkOffset.parse(json);
  }

  @Override
  public void commit(Offset end) {
    // the database keeps no state for the reader
  }

  @Override
  public synchronized void stop() {
    dropPlanned();
    if (conn != null) {
      ConnectionPool.giveBack(plan.options, conn);
      conn = null;
    }
  }

  @Override
  public String toString() {
    return "jdbc_incremental[" + plan.options.shortRelation() + "]";
  }
}
