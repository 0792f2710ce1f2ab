package medallion.sources;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.sql.connector.read.streaming.Offset;

/**
 * {@code {"watermark": <the column's text or null>, "nullRows": <rows without a watermark>}}: the JSON the Python
 * source writes (Python's {@code json.dumps}), so that a checkpoint written by either implementation resumes in
 * the other.
 */
final class WatermarkOffset extends Offset {
  private static final Pattern WATERMARK = Pattern.compile("\"watermark\"\\s*:\\s*(null|\"((?:[^\"\\\\]|\\\\.)*)\")");
  private static final Pattern NULL_ROWS = Pattern.compile("\"nullRows\"\\s*:\\s*(\\d+)");

  final String watermark;
  final long nullRows;

  WatermarkOffset(String watermark, long nullRows) {
    this.watermark = watermark;
    this.nullRows = nullRows;
  }

  static WatermarkOffset parse(String json) {
    Matcher w = WATERMARK.matcher(json);
    Matcher n = NULL_ROWS.matcher(json);
    if (!w.find()) {
      throw SourceException.options("not a jdbc_incremental offset: " + json);
    }
    String value = w.group(2) == null ? null : w.group(2).replace("\\\"", "\"").replace("\\\\", "\\");
    return new WatermarkOffset(value, n.find() ? Long.parseLong(n.group(1)) : 0);
  }

  @Override
  public String json() {
    String value = watermark == null ? "null"
        : "\"" + watermark.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    return "{\"watermark\": " + value + ", \"nullRows\": " + nullRows + "}";
  }
}
