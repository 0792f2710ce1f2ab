package medallion.autoloader;

import com.univocity.parsers.csv.CsvParser;
import com.univocity.parsers.csv.CsvParserSettings;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.csv.CSVOptions;

/**
 * How CSV lines become records for {@link CsvLines}; built from the configuration argument (see {@link #parse}).
 *
 * <p>A line is tokenized by univocity with Spark's own settings for the options given ({@link CSVOptions}), into
 * {@code width} slots as {@code from_csv} does (further tokens are dropped, the null value becomes NULL). A line is
 * corrupt when it fills the last slot (more fields than any header plus a margin) or holds an odd number of quote
 * characters (an open quote). A record is {@code struct<r: string, v: array<string>, u: map<string,string>,
 * h: array<string>, s: boolean>}: {@code r} the line when corrupt (then nothing else), {@code v} the value of each
 * schema column, {@code u} the non-NULL values of the other positions by their key, NULL when there are none;
 * {@code s} is true for a line that is no record (a skipped line or the header) and {@code h} then holds the
 * header's names that are not schema columns.
 */
final class CsvLayout {
  static final String SEP = "\u0001";

  final boolean caseSensitive;
  final boolean header;
  final int width;
  final int skipRows;
  final String comment;
  final Pattern lineSep;
  final String[] names;
  /** The key of each position (from the current file's header, else positional) and what it means. */
  private String[] keys;
  private int[] positions;
  private boolean[] known;
  private final CsvParser parser;
  /** Settings under which a line without special characters is just split at the delimiter (see simple). */
  private final boolean plainSettings;
  private final char delimiter;
  private final char quoteEscape;
  private final char commentChar;
  private final boolean comments;
  private final int maxColumns;
  private final String nullValue;
  private final char quote;

  private CsvLayout(Map<String, String> config, Map<String, String> csvOptions) {
    caseSensitive = config.get("caseSensitive").equals("1");
    header = config.getOrDefault("header", "0").equals("1");
    width = Integer.parseInt(config.get("width"));
    skipRows = Integer.parseInt(config.getOrDefault("skipRows", "0"));
    comment = config.getOrDefault("comment", "");
    String sep = config.getOrDefault("lineSep", "");
    lineSep = Pattern.compile(sep.isEmpty() ? "\r?\n" : Pattern.quote(sep));
    String joined = config.getOrDefault("names", "");
    names = joined.isEmpty() ? new String[0] : joined.split("\u0002", -1);
    for (int i = 0; i < names.length; i++) {
      names[i] = caseSensitive ? names[i] : names[i].toLowerCase(Locale.ROOT);
    }
    scala.collection.immutable.Map<String, String> options = scala.collection.immutable.Map$.MODULE$.empty();
    for (Map.Entry<String, String> e : csvOptions.entrySet()) {
      options = options.updated(e.getKey(), e.getValue());
    }
    CSVOptions spark = new CSVOptions(options, false, "UTC");
    CsvParserSettings settings = spark.asParserSettings();
    parser = new CsvParser(settings);
    nullValue = spark.nullValue();
    String delimiters = settings.getFormat().getDelimiterString();
    plainSettings = delimiters.length() == 1 && !settings.getIgnoreLeadingWhitespaces()
        && !settings.getIgnoreTrailingWhitespaces() && settings.getMaxCharsPerColumn() < 0;
    delimiter = delimiters.charAt(0);
    quoteEscape = settings.getFormat().getQuoteEscape();
    commentChar = settings.getFormat().getComment();
    comments = settings.isCommentProcessingEnabled();
    maxColumns = settings.getMaxColumns();
    String q = csvOptions.getOrDefault("quote", "\"");
    quote = q.isEmpty() ? 0 : q.charAt(0);
    use(positionalKeys());
  }

  private void use(String[] keys) {
    this.keys = keys;
    positions = columnPositions(keys);
    known = known(keys);
  }

  /** Name the positions by a file's header line; the header's names that are not schema columns. */
  String[] useHeader(String line) {
    String[] names = slots(line);
    use(keys(names));
    return unknownNamed(names);
  }

  /**
   * {@code key=value} entries separated by U+0001: {@code caseSensitive} (0|1), {@code width}, {@code skipRows},
   * {@code comment}, {@code lineSep}, {@code header} (0|1), {@code names} (the schema's columns separated by
   * U+0002), and every Spark CSV parser option prefixed with {@code csv.}.
   */
  static CsvLayout parse(String config) {
    Map<String, String> own = new HashMap<>();
    Map<String, String> csv = new HashMap<>();
    for (String entry : config.split(SEP, -1)) {
      int eq = entry.indexOf('=');
      if (eq < 0) {
        continue;
      }
      String key = entry.substring(0, eq);
      if (key.startsWith("csv.")) {
        csv.put(key.substring(4), entry.substring(eq + 1));
      } else {
        own.put(key, entry.substring(eq + 1));
      }
    }
    return new CsvLayout(own, csv);
  }

  /**
   * The lines of a text to read: not blank and not comments. Blank as in Spark's CSV reader ({@code
   * CSVExprUtils.filterCommentAndEmpty}: {@code line.trim.nonEmpty}), so every char {@code <= ' '}: a line of
   * tabs is no record.
   */
  List<String> lines(String text) {
    List<String> out = new ArrayList<>();
    for (String line : lineSep.split(text, -1)) {
      if (keep(line)) {
        out.add(line);
      }
    }
    return out;
  }

  boolean keep(String line) {
    int start = 0;
    int end = line.length();
    while (start < end && line.charAt(start) <= ' ') {
      start++;
    }
    if (start == end) {
      return false;
    }
    return comment.isEmpty() || !line.startsWith(comment);
  }

  /** The line's first {@code width} fields; NULL for absent, empty or null-valued fields. */
  String[] slots(String line) {
    return simple(line) ? split(line) : tokenize(line);
  }

  private String[] tokenize(String line) {
    String[] tokens = parser.parseLine(line);
    String[] out = new String[width];
    if (tokens != null) {
      for (int i = 0; i < Math.min(width, tokens.length); i++) {
        String t = tokens[i];
        out[i] = t == null || t.equals(nullValue) ? null : t;
      }
    }
    return out;
  }

  /**
   * Whether univocity, with Spark's settings, would just split the line at the delimiter: one delimiter
   * character, no whitespace trimming or length limit, and no quote, quote escape, line break or leading comment
   * character in the line. Most lines of most files; {@link #split} is several times faster than
   * {@code parseLine}, which sets up a reader and ends each line with an exception.
   */
  private boolean simple(String line) {
    if (!plainSettings || (comments && !line.isEmpty() && line.charAt(0) == commentChar)) {
      return false;
    }
    for (int i = 0; i < line.length(); i++) {
      char c = line.charAt(i);
      if (c == quote || c == quoteEscape || c == '\r' || c == '\n') {
        return false;
      }
    }
    return true;
  }

  /** A simple line's first {@code width} fields, as univocity gives them (an empty field is NULL). */
  private String[] split(String line) {
    String[] out = new String[width];
    int field = 0;
    int start = 0;
    int length = line.length();
    while (true) {
      int end = line.indexOf(delimiter, start);
      if (end < 0) {
        end = length;
      }
      if (field < width && end > start) {
        String t = line.substring(start, end);
        out[field] = t.equals(nullValue) ? null : t;
      }
      field++;
      if (end == length) {
        break;
      }
      start = end + 1;
    }
    return field > maxColumns ? tokenize(line) : out;  // univocity's error for too many columns
  }

  /** Keys of a file's positions: header names (or {@code _c<i>}), a repeated name suffixed with its position. */
  private String[] keys(String[] header) {
    String[] raw = new String[width];
    for (int i = 0; i < width; i++) {
      String k = header[i] == null ? "_c" + i : header[i];
      raw[i] = caseSensitive ? k : k.toLowerCase(Locale.ROOT);
    }
    String[] keys = new String[width];
    Map<String, Integer> first = new HashMap<>();
    for (int i = 0; i < width; i++) {
      Integer at = first.putIfAbsent(raw[i], i);
      keys[i] = at == null ? raw[i] : raw[i] + i;
    }
    return keys;
  }

  /** Keys of the positions of a file without a header: the schema's columns in order, then {@code _c<i>}. */
  private String[] positionalKeys() {
    String[] keys = new String[width];
    for (int i = 0; i < width; i++) {
      keys[i] = i < names.length ? names[i] : "_c" + i;
    }
    return keys;
  }

  /** Header names not in the schema (exact case), each once, in header order. */
  private String[] unknownNamed(String[] header) {
    List<String> out = new ArrayList<>();
    for (String name : header) {
      if (name != null && !contains(names, name) && !out.contains(name)) {
        out.add(name);
      }
    }
    return out.toArray(new String[0]);
  }

  /** For the given keys: each schema column's position (-1: absent) and whether a position is a schema column. */
  private int[] columnPositions(String[] keys) {
    int[] at = new int[names.length];
    for (int j = 0; j < names.length; j++) {
      at[j] = -1;
      for (int i = 0; i < keys.length; i++) {
        if (keys[i].equals(names[j])) {
          at[j] = i;
          break;
        }
      }
    }
    return at;
  }

  private boolean[] known(String[] keys) {
    boolean[] out = new boolean[keys.length];
    for (int i = 0; i < keys.length; i++) {
      out[i] = contains(names, keys[i]);
    }
    return out;
  }

  Row record(String line) {
    boolean simple = simple(line);
    String[] slots = simple ? split(line) : tokenize(line);
    if (slots[width - 1] != null || (!simple && oddQuotes(line))) {
      return RowFactory.create(line, new String[names.length], null, null, false);
    }
    String[] values = new String[names.length];
    for (int j = 0; j < names.length; j++) {
      values[j] = positions[j] < 0 ? null : slots[positions[j]];
    }
    Map<String, String> unknown = null;
    for (int i = 0; i < width; i++) {
      if (!known[i] && slots[i] != null) {
        if (unknown == null) {
          unknown = new LinkedHashMap<>();
        }
        unknown.put(keys[i], slots[i]);
      }
    }
    return RowFactory.create(null, values, unknown, null, false);
  }

  /** A line that is no record; {@code unknownNamed} for a header line. */
  static Row skipped(String[] unknownNamed) {
    return RowFactory.create(null, null, null, unknownNamed, true);
  }

  private boolean oddQuotes(String line) {
    if (quote == 0) {
      return false;
    }
    int n = 0;
    for (int i = 0; i < line.length(); i++) {
      if (line.charAt(i) == quote) {
        n++;
      }
    }
    return n % 2 == 1;
  }

  private static boolean contains(String[] values, String value) {
    for (String v : values) {
      if (v.equals(value)) {
        return true;
      }
    }
    return false;
  }
}
