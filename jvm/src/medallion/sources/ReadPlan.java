package medallion.sources;

import java.io.Serializable;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A checked read: the options, the relation's columns, the watermark column and the normalised starting watermark
 * (the database's own text of it). Built on the driver once per query; travels to the tasks inside the partitions.
 */
final class ReadPlan implements Serializable {
  private static final long serialVersionUID = 1L;
  static final int MIN_ROWS_PER_RANGE = 50_000;
  private static final java.util.regex.Pattern ROWS = java.util.regex.Pattern.compile("\"Plan Rows\":\\s*(\\d+)");

  final IncrementalOptions options;
  final List<PgColumn> columns;
  final PgColumn watermark;
  final String startingWatermark;
  final boolean tracksTransactions; // rows have an xmin: transactions in flight are tracked (InFlight)

  private ReadPlan(IncrementalOptions options, List<PgColumn> columns, PgColumn watermark, String start,
      boolean tracks) {
    this.options = options;
    this.columns = columns;
    this.watermark = watermark;
    this.startingWatermark = start;
    this.tracksTransactions = tracks;
  }

  /** The plan of a read with these options, checked against the database's catalog. */
  static ReadPlan of(Map<String, String> given) {
    IncrementalOptions options = IncrementalOptions.parse(given);
    return ConnectionPool.with(options, conn -> of(conn, options));
  }

  private static ReadPlan of(Connection conn, IncrementalOptions options) {
    List<PgColumn> columns = Pg.describe(conn, options);
    PgColumn watermark = find(columns, options);
    String kind = watermark.watermarkKind();
    if (options.lookback != null && options.lookbackIsInterval() != kind.equals("time")) {
      throw SourceException.options("'lookback' must be " + (kind.equals("time") ? "an interval such as "
          + "'2 hours'" : "a number") + " for the " + watermark.dbType + " column '" + watermark.name + "'");
    }
    String start = null;
    if (options.startingWatermark != null) {
      start = Pg.scalar(conn, options, "SELECT " + Pg.typed(options.startingWatermark, watermark) + "::text");
    }
    return new ReadPlan(options, columns, watermark, start, Pg.tracksTransactions(conn, options));
  }

  private static PgColumn find(List<PgColumn> columns, IncrementalOptions options) {
    for (PgColumn c : columns) {
      if (c.name.equals(options.watermarkColumn)) {
        return c;
      }
    }
    List<String> names = new ArrayList<>();
    for (PgColumn c : columns) {
      if (c.name.equalsIgnoreCase(options.watermarkColumn)) {
        return c;
      }
      names.add(c.name);
    }
    throw SourceException.options("watermarkColumn '" + options.watermarkColumn + "' is not a column of "
        + options.shortRelation() + " (columns: " + String.join(", ", names) + ")");
  }

  StructType schema() {
    StructField[] fields = new StructField[columns.size()];
    for (int i = 0; i < fields.length; i++) {
      fields[i] = DataTypes.createStructField(columns.get(i).name, columns.get(i).sparkType, true);
    }
    return DataTypes.createStructType(fields);
  }

  /**
   * How many ranges a batch is read in: {@code numPartitions}, fewer when the database's planner estimates under
   * {@value #MIN_ROWS_PER_RANGE} rows per range: a small incremental batch runs as one task on one connection
   * (the estimate costs a millisecond; a count would read the rows).
   */
  private int partsFor(Connection conn, String lower, String upper) {
    if (options.numPartitions <= 1) {
      return 1;
    }
    String plan = Pg.scalar(conn, options, Pg.estimateSql(options.relation, watermark, lower, upper));
    java.util.regex.Matcher rows = ROWS.matcher(plan == null ? "" : plan);
    long count = rows.find() ? Long.parseLong(rows.group(1)) : Long.MAX_VALUE / 2;
    return (int) Math.max(1, Math.min(options.numPartitions, (count + MIN_ROWS_PER_RANGE - 1) / MIN_ROWS_PER_RANGE));
  }

  /**
   * {@code parts - 1} inner bounds of {@code (lower, upper]}: quantiles from the table's statistics (the planner's
   * histogram of the column) when it has them, so that ranges hold about as many rows each even when the values
   * are skewed (rows updated long after the others); else evenly spaced values.
   */
  private List<String> splitPoints(Connection conn, String lower, String upper, int parts) {
    if (parts <= 1) {
      return List.of();
    }
    if (!options.relation.startsWith("(")) {
      List<String> quantiles = Pg.column(conn, options, Pg.histogramSql(options.relation, watermark, lower, upper));
      if (quantiles.size() >= parts - 1) {
        List<String> out = new ArrayList<>();
        for (int k = 1; k < parts; k++) {
          String point = quantiles.get((int) ((long) k * quantiles.size() / parts));
          if (out.isEmpty() || !out.get(out.size() - 1).equals(point)) {
            out.add(point);
          }
        }
        return out;
      }
    }
    return Pg.column(conn, options, Pg.splitPointsSql(options.relation, watermark, lower, upper, parts));
  }

  /**
   * A batch {@code start -> end}: the ranges of {@code (start - lookback, end]} without the rows of transactions in
   * flight at {@code end}, and one more for the rows of those in flight at {@code start} that ended since.
   */
  RangeRead.Partition[] batch(Connection conn, WatermarkOffset start, WatermarkOffset end) {
    List<RangeRead.Partition> out = new ArrayList<>();
    if (end.watermark != null && !end.watermark.equals(start.watermark)) {
      out.addAll(List.of(partitions(conn, start.watermark, end.watermark, InFlight.excluded(end.inFlight))));
    }
    List<InFlight.Group> gone = InFlight.ended(start.inFlight, end.inFlight);
    if (!gone.isEmpty() && start.watermark != null) {
      String upper = Pg.lowered(start.watermark, watermark, options);
      out.add(new RangeRead.Partition(Pg.rowsSql(options.relation, columns,
          InFlight.endedCondition(gone, watermark, upper))));
    }
    return out.toArray(new RangeRead.Partition[0]);
  }

  /** The ranges of a batch {@code (start - lookback, end]}, split into {@code numPartitions} parts. */
  RangeRead.Partition[] partitions(Connection conn, String start, String end) {
    return partitions(conn, start, end, null);
  }

  private RangeRead.Partition[] partitions(Connection conn, String start, String end, String excluded) {
    String lower = start == null ? null : Pg.lowered(start, watermark, options);
    String upper = Pg.typed(end, watermark);
    List<String> bounds = new ArrayList<>();
    bounds.add(lower);
    int parts = partsFor(conn, lower, upper);
    for (String point : splitPoints(conn, lower, upper, parts)) {
      bounds.add(Pg.typed(point, watermark));
    }
    bounds.add(upper);
    RangeRead.Partition[] out = new RangeRead.Partition[bounds.size() - 1];
    for (int i = 0; i + 1 < bounds.size(); i++) {
      out[i] = new RangeRead.Partition(Pg.rangeSql(options.relation, columns, watermark, bounds.get(i),
          bounds.get(i + 1), excluded));
    }
    return out;
  }
}
