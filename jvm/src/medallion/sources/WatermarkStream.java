package medallion.sources;

import java.sql.Connection;
import java.util.Objects;

import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxRows;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;

/**
 * The streaming side, as the Python source's {@code JdbcIncrementalStreamReader}: the offset is the watermark;
 * {@code latestOffset} returns the start unchanged when nothing is new (no empty batch runs); a batch reads
 * {@code (start - lookback, end]}; with {@code Trigger.AvailableNow} the end is capped at the greatest watermark
 * seen when the query started. The driver holds one pooled connection for the offset queries while the query runs.
 */
final class WatermarkStream implements MicroBatchStream, SupportsTriggerAvailableNow {
  private final ReadPlan plan;
  private Connection conn;
  private String target;
  private boolean capped;

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

  @Override
  public Offset latestOffset(Offset startOffset, ReadLimit limit) {
    WatermarkOffset start = (WatermarkOffset) startOffset;
    if (capped && target == null) {
      return start;
    }
    long maxRows = limit instanceof ReadMaxRows ? ((ReadMaxRows) limit).maxRows() : 0;
    String end = scalar(Pg.maxWatermarkSql(plan.options.relation, plan.watermark, start.watermark, target, maxRows));
    if (end == null) {
      return start;
    }
    String nulls = scalar(Pg.nullCountSql(plan.options.relation, plan.watermark));
    return new WatermarkOffset(end, nulls == null ? 0 : Long.parseLong(nulls));
  }

  @Override
  public InputPartition[] planInputPartitions(Offset startOffset, Offset endOffset) {
    WatermarkOffset start = (WatermarkOffset) startOffset;
    WatermarkOffset end = (WatermarkOffset) endOffset;
    if (end.watermark == null || Objects.equals(start.watermark, end.watermark)) {
      return new InputPartition[0];
    }
    return withConnection(c -> plan.partitions(c, start.watermark, end.watermark));
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
