package medallion.sources;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

/**
 * The options of a {@code jdbc_incremental} read (names case-insensitive), as the Python source takes them. The
 * pipeline runner checks them on the driver first ({@code framework/sources/options.py}, every problem at once);
 * this class refuses what it cannot run with, for reads that bypass the runner.
 */
final class IncrementalOptions implements Serializable {
  private static final long serialVersionUID = 1L;
  static final int DEFAULT_FETCH_SIZE = 50_000;
  private static final Set<String> KNOWN = Set.of("url", "dbtable", "query", "user", "password",
      "watermarkcolumn", "startingwatermark", "lookback", "maxrowsperbatch", "fetchsize", "numpartitions", "path");

  final String url;
  final String relation;
  final String watermarkColumn;
  final String user;
  final String password;
  final String startingWatermark;
  final String lookback;
  final long maxRowsPerBatch; // 0: no limit
  final int fetchSize;
  final int numPartitions;

  private IncrementalOptions(Map<String, String> given) {
    url = given.get("url");
    String table = blankToNull(given.get("dbtable"));
    String query = blankToNull(given.get("query"));
    relation = table != null ? table.trim() : "(" + stripSemicolon(query) + ") AS medallion_source";
    watermarkColumn = given.get("watermarkcolumn").trim();
    user = given.get("user");
    password = given.get("password");
    startingWatermark = given.get("startingwatermark");
    lookback = blankToNull(given.get("lookback"));
    maxRowsPerBatch = positive(given, "maxrowsperbatch", 0);
    fetchSize = (int) positive(given, "fetchsize", DEFAULT_FETCH_SIZE);
    numPartitions = (int) positive(given, "numpartitions", 1);
  }

  /** The options of a read; a {@link SourceException} (INVALID_SOURCE_OPTIONS) naming every problem. */
  static IncrementalOptions parse(Map<String, String> options) {
    Map<String, String> given = new java.util.HashMap<>();
    options.forEach((k, v) -> given.put(k.toLowerCase(Locale.ROOT), v));
    List<String> problems = new ArrayList<>();
    for (String key : given.keySet()) {
      if (!KNOWN.contains(key)) {
        problems.add("unknown option '" + key + "'");
      }
    }
    for (String key : new String[] {"url", "watermarkColumn"}) {
      if (blankToNull(given.get(key.toLowerCase(Locale.ROOT))) == null) {
        problems.add("option '" + key + "' is required");
      }
    }
    if ((blankToNull(given.get("dbtable")) == null) == (blankToNull(given.get("query")) == null)) {
      problems.add("give exactly one of 'dbtable' (a table or view name) and 'query' (a SELECT statement)");
    }
    String url = given.get("url");
    if (url != null && !url.startsWith("jdbc:postgresql:")) {
      problems.add("'url' must be a PostgreSQL JDBC URL (jdbc:postgresql://host:port/database)");
    }
    for (String key : new String[] {"maxrowsperbatch", "fetchsize", "numpartitions"}) {
      if (given.containsKey(key) && parsePositive(given.get(key)) <= 0) {
        problems.add("'" + key + "' must be a positive whole number, got '" + given.get(key) + "'");
      }
    }
    if (!problems.isEmpty()) {
      throw SourceException.options(problems.size() + " problem(s) in the options of the jdbc_incremental "
          + "source: " + String.join("; ", problems));
    }
    return new IncrementalOptions(given);
  }

  /** True when {@code lookback} is an interval ("2 hours"), false when a number or not set. */
  boolean lookbackIsInterval() {
    if (lookback == null) {
      return false;
    }
    try {
      new java.math.BigDecimal(lookback.trim());
      return false;
    } catch (NumberFormatException e) {
      return true;
    }
  }

  /** The driver's connection properties: the user and password when given (else the URL's). */
  Properties connectionProperties() {
    Properties props = new Properties();
    if (user != null) {
      props.setProperty("user", user);
    }
    if (password != null) {
      props.setProperty("password", password);
    }
    props.setProperty("ApplicationName", "medallion jdbc_incremental");
    return props;
  }

  /** The host, port and database of the URL (no parameters: they may hold a password). */
  String endpoint() {
    String rest = url.substring("jdbc:postgresql:".length()).replaceFirst("^//", "");
    int query = rest.indexOf('?');
    return query < 0 ? rest : rest.substring(0, query);
  }

  /** {@code text} with the password, raw and percent-encoded, replaced by {@code *****}. */
  String scrub(String text) {
    if (password == null || password.isEmpty()) {
      return text;
    }
    String encoded = java.net.URLEncoder.encode(password, java.nio.charset.StandardCharsets.UTF_8);
    return text.replace(password, "*****").replace(encoded, "*****");
  }

  String shortRelation() {
    return relation.length() < 200 ? relation : relation.substring(0, 200) + "...";
  }

  private static String blankToNull(String value) {
    return value == null || value.isBlank() ? null : value;
  }

  private static String stripSemicolon(String query) {
    String text = query.strip();
    while (text.endsWith(";")) {
      text = text.substring(0, text.length() - 1).strip();
    }
    return text;
  }

  private static long parsePositive(String text) {
    try {
      return Long.parseLong(text.trim());
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  private static long positive(Map<String, String> given, String key, long otherwise) {
    return given.containsKey(key) ? parsePositive(given.get(key)) : otherwise;
  }
}
