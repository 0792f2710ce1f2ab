package medallion.autoloader;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.deploy.SparkHadoopUtil;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.api.java.UDF3;

/**
 * One kept CSV line (not blank, not a comment) of a file, with the file's path and the start of the file block it
 * was read from → a record (see {@link CsvLayout}). Registered as a non-deterministic Spark SQL function by
 * {@code framework/autoloader/jvm.py}, so that Spark calls it exactly once per line, in the order the lines are read.
 *
 * <p>Without a header, positions are the schema's columns in order, then {@code _c<i>}. With a header, the lines of
 * the block at offset 0 of each file arrive first: the first {@code skipRows} lines are skipped and the next one is
 * the header, which names the positions of the file's later lines. For a later block of a file split by Spark (a
 * file larger than {@code spark.sql.files.maxPartitionBytes}), the header is read from the file's start.
 *
 * <p>The constructor takes the configuration (see {@link CsvLayout#parse}).
 */
public final class CsvLines implements UDF3<String, String, Long, Row> {
  private static final long serialVersionUID = 1L;
  private static final int HEAD_BYTES = 4 << 20;

  private final String config;
  private transient CsvLayout layout;
  private transient String path;
  private transient long block;
  private transient int seen;

  public CsvLines(String config) {
    this.config = config;
  }

  @Override
  public Row call(String line, String path, Long block) throws IOException {
    if (line == null) {
      return null;
    }
    if (layout == null) {
      layout = CsvLayout.parse(config);
    }
    if (!layout.header) {
      return layout.record(line);
    }
    long start = block == null ? 0 : block;
    if (!path.equals(this.path) || start != this.block) {
      this.path = path;
      this.block = start;
      seen = 0;
      if (start > 0) {
        layout.useHeader(headerLine(path));
      }
    }
    if (start == 0 && seen <= layout.skipRows) {
      seen++;
      return CsvLayout.skipped(seen <= layout.skipRows ? null : layout.useHeader(line));
    }
    return layout.record(line);
  }

  private String headerLine(String file) throws IOException {
    Path p = new Path(URI.create(file));
    FileSystem fs = p.getFileSystem(SparkHadoopUtil.get().conf());
    byte[] head;
    try (InputStream in = fs.open(p)) {
      head = in.readNBytes(HEAD_BYTES);
    }
    List<String> lines = layout.lines(new String(head, StandardCharsets.UTF_8));
    if (lines.size() <= layout.skipRows + 1) {  // the last line may be cut off
      throw new IOException("no CSV header line in the first " + HEAD_BYTES + " bytes of " + file);
    }
    return lines.get(layout.skipRows);
  }
}
