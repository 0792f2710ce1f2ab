package medallion.sources;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code format("jdbc_incremental")} on the JVM: the local twin of the Python data source
 * {@code framework/sources/jdbc_incremental.py}, with the same options, schema, SQL and offsets (a checkpoint of
 * one resumes in the other). Spark runs a Python streaming source in a Python process it starts for every query
 * (about 1.5 s before the first offset); this one starts in milliseconds. The Python source is what a Databricks
 * pipeline registers; locally the framework's jar registers this one under the same name.
 */
public final class JdbcIncremental implements TableProvider, DataSourceRegister {
  private ReadPlan plan; // inferSchema and getTable are called on one instance: the catalog is read once

  /**
   * How many micro-batch reads this JVM started ahead on the driver, how many their tasks took over, and how many
   * were dropped because no task came for them (see {@link ReadAhead}).
   */
  public static Map<String, Long> readAheadCounts() {
    return Map.of("started", ReadAhead.STARTED.get(), "claimed", ReadAhead.CLAIMED.get(),
        "dropped", ReadAhead.DROPPED.get());
  }

  @Override
  public String shortName() {
    return "jdbc_incremental";
  }

  private synchronized ReadPlan plan(Map<String, String> options) {
    if (plan == null) {
      plan = ReadPlan.of(options);
    }
    return plan;
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return plan(options).schema();
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new SourceTable(plan(new CaseInsensitiveStringMap(properties)));
  }

  /** The relation read, readable as a stream and as a batch. */
  static final class SourceTable implements SupportsRead {
    private final ReadPlan plan;

    SourceTable(ReadPlan plan) {
      this.plan = plan;
    }

    @Override
    public String name() {
      return "jdbc_incremental[" + plan.options.shortRelation() + "]";
    }

    @Override
    @SuppressWarnings("deprecation") // Table.columns() is built from it by default
    public StructType schema() {
      return plan.schema();
    }

    @Override
    public Set<TableCapability> capabilities() {
      return EnumSet.of(TableCapability.MICRO_BATCH_READ, TableCapability.BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
      return () -> new SourceScan(plan);
    }
  }

  /** A scan: a micro-batch stream, or a batch of every row above {@code startingWatermark}. */
  static final class SourceScan implements Scan, Batch {
    private final ReadPlan plan;

    SourceScan(ReadPlan plan) {
      this.plan = plan;
    }

    @Override
    public StructType readSchema() {
      return plan.schema();
    }

    @Override
    public String description() {
      return "jdbc_incremental[" + plan.options.shortRelation() + "]";
    }

    @Override
    public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
      return new WatermarkStream(plan);
    }

    @Override
    public Batch toBatch() {
      return this;
    }

    @Override
    public InputPartition[] planInputPartitions() {
      return ConnectionPool.with(plan.options, conn -> {
        String end = Pg.scalar(conn, plan.options,
            Pg.maxWatermarkSql(plan.options.relation, plan.watermark, plan.startingWatermark, null, 0));
        return end == null ? new InputPartition[0] : plan.partitions(conn, plan.startingWatermark, end);
      });
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
      return new RangeRead.Factory(plan);
    }
  }
}
