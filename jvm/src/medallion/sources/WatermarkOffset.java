package medallion.sources;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.sql.connector.read.streaming.Offset;

/**
 * {@code {"watermark": <the column's text or null>, "nullRows": <rows without a watermark>}}, plus
 * {@code "inFlight": [{"after": ..., "xids": [...]}]} when transactions were in flight at the offset query (absent
 * otherwise, and in offsets written before it existed, which read as none): the JSON the Python source writes
 * (Python's {@code json.dumps}), so that a checkpoint written by either implementation resumes in the other.
 */
final class WatermarkOffset extends Offset {
  private static final String STRING = "(null|\"((?:[^\"\\\\]|\\\\.)*)\")";
  private static final Pattern WATERMARK = Pattern.compile("\"watermark\"\\s*:\\s*" + STRING);
  private static final Pattern NULL_ROWS = Pattern.compile("\"nullRows\"\\s*:\\s*(\\d+)");
  private static final Pattern IN_FLIGHT = Pattern.compile("\"inFlight\"\\s*:\\s*\\[");
  private static final Pattern GROUP =
      Pattern.compile("\\{\\s*\"after\"\\s*:\\s*" + STRING + "\\s*,\\s*\"xids\"\\s*:\\s*\\[([^\\]]*)\\]\\s*\\}");

  final String watermark;
  final long nullRows;
  final List<InFlight.Group> inFlight;

  WatermarkOffset(String watermark, long nullRows) {
    this(watermark, nullRows, List.of());
  }

  WatermarkOffset(String watermark, long nullRows, List<InFlight.Group> inFlight) {
    this.watermark = watermark;
    this.nullRows = nullRows;
    this.inFlight = List.copyOf(inFlight);
  }

  static WatermarkOffset parse(String json) {
    Matcher w = WATERMARK.matcher(json);
    Matcher n = NULL_ROWS.matcher(json);
    if (!w.find()) {
      throw SourceException.options("not a jdbc_incremental offset: " + json);
    }
    List<InFlight.Group> groups = new ArrayList<>();
    Matcher f = IN_FLIGHT.matcher(json);
    if (f.find()) {
      Matcher g = GROUP.matcher(json);
      for (int at = f.end(); g.find(at); at = g.end()) {
        List<Long> xids = new ArrayList<>();
        for (String x : g.group(3).split(",")) {
          if (!x.isBlank()) {
            xids.add(Long.parseLong(x.trim()));
          }
        }
        groups.add(new InFlight.Group(unquoted(g.group(2)), xids));
      }
    }
    return new WatermarkOffset(unquoted(w.group(2)), n.find() ? Long.parseLong(n.group(1)) : 0, groups);
  }

  private static String unquoted(String text) {
    return text == null ? null : text.replace("\\\"", "\"").replace("\\\\", "\\");
  }

  static String quoted(String text) {
    return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  @Override
  public String json() {
    String value = watermark == null ? "null" : quoted(watermark);
    StringBuilder groups = new StringBuilder();
    for (InFlight.Group group : inFlight) {
      groups.append(groups.length() == 0 ? "" : ", ").append(group.json());
    }
    String tail = inFlight.isEmpty() ? "" : ", \"inFlight\": [" + groups + "]";
    return "{\"watermark\": " + value + ", \"nullRows\": " + nullRows + tail + "}";
  }
}
