package medallion.autoloader;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonFactoryBuilder;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import java.io.IOException;
import java.io.StringWriter;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;

/**
 * One JSON-lines record, parsed once: the raw text of each schema column's value and the entries whose key is no
 * schema column. Registered by {@code framework/autoloader/jvm.py} as a Spark SQL function returning
 * {@code struct<v: array<string>, u: map<string,string>>}; NULL for a record that is not one JSON object (a corrupt
 * record, kept whole by the caller).
 *
 * <p>A value's raw text is what Spark's {@code from_json} gives for a string field: a JSON string's text, NULL for
 * a JSON null, and any other value (number, boolean, object, array) re-written compactly by Jackson. Typing, the
 * new-column guard and the rescued-data JSON stay in Spark expressions; this replaces the {@code from_json} into a
 * {@code map<string,string>} and the per-column map look-ups, which re-created a JSON generator for every
 * non-string value.
 *
 * <p>The constructor takes the configuration: {@code <case sensitive 0|1>\u0001<parser features,
 * comma-separated>\u0001<column>\u0001<column>...}. Keys match columns exactly, or after lower-casing both when
 * case-insensitive. A key given twice keeps its last value.
 */
public final class JsonFields implements UDF1<String, Row> {
  private static final long serialVersionUID = 1L;
  private static final String SEP = "\u0001";

  private final String config;
  private transient Map<String, Integer> positions;
  private transient boolean caseSensitive;
  private transient int width;
  private transient JsonFactory factory;
  private transient StringWriter text;
  private transient JsonGenerator copier;

  public JsonFields(String config) {
    this.config = config;
  }

  @Override
  public Row call(String record) throws IOException {
    if (record == null) {
      return null;
    }
    if (factory == null) {
      configure();
    }
    String[] values = new String[width];
    Map<String, String> unknown = null;
    try (JsonParser parser = factory.createParser(record)) {
      if (parser.nextToken() != JsonToken.START_OBJECT) {
        return null;
      }
      JsonToken token;
      while ((token = parser.nextToken()) == JsonToken.FIELD_NAME) {
        String key = parser.currentName();
        parser.nextToken();
        String value = valueText(parser);
        Integer at = positions.get(caseSensitive ? key : key.toLowerCase(Locale.ROOT));
        if (at != null) {
          values[at] = value;
        } else {
          if (unknown == null) {
            unknown = new LinkedHashMap<>();
          }
          unknown.put(key, value);
        }
      }
      if (token != JsonToken.END_OBJECT) {
        return null;
      }
    } catch (JsonProcessingException e) {
      resetCopier();
      return null;
    }
    return RowFactory.create(values, unknown);
  }

  private String valueText(JsonParser parser) throws IOException {
    JsonToken token = parser.currentToken();
    if (token == JsonToken.VALUE_STRING) {
      return parser.getText();
    }
    if (token == JsonToken.VALUE_NULL) {
      return null;
    }
    if (token == JsonToken.VALUE_NUMBER_INT) {
      String digits = parser.getText();
      if (canonicalInteger(digits)) {
        return digits;  // what re-writing it would give: skip the generator
      }
    }
    copier.copyCurrentStructure(parser);
    copier.flush();
    String out = text.toString();
    text.getBuffer().setLength(0);
    return out;
  }

  /** An integer literal Jackson writes back unchanged: no leading zero (and not "-0"), no plus sign. */
  private static boolean canonicalInteger(String digits) {
    int start = digits.startsWith("-") ? 1 : 0;
    if (digits.length() <= start || digits.charAt(start) == '+') {
      return false;
    }
    return digits.charAt(start) != '0' || (digits.length() == 1);
  }

  private void configure() throws IOException {
    String[] parts = config.split(SEP, -1);
    caseSensitive = parts[0].equals("1");
    JsonFactoryBuilder builder = new JsonFactoryBuilder();
    // Spark's JSON reader defaults: single quotes and NaN/Infinity allowed
    builder.enable(JsonReadFeature.ALLOW_SINGLE_QUOTES).enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS);
    for (String feature : parts[1].split(",")) {
      if (!feature.isEmpty()) {
        feature(builder, feature);
      }
    }
    factory = builder.build();
    width = parts.length - 2;
    positions = new HashMap<>();
    for (int i = 0; i < width; i++) {
      positions.put(caseSensitive ? parts[i + 2] : parts[i + 2].toLowerCase(Locale.ROOT), i);
    }
    resetCopier();
  }

  private void resetCopier() throws IOException {
    text = new StringWriter();
    copier = factory.createGenerator(text);
    copier.setRootValueSeparator(null);
  }

  /** {@code name=true|false}: the Spark JSON option of that name, as Spark maps it to a Jackson feature. */
  private static void feature(JsonFactoryBuilder builder, String setting) {
    String[] kv = setting.split("=", 2);
    boolean on = kv.length == 2 && kv[1].trim().equalsIgnoreCase("true");
    JsonReadFeature f;
    switch (kv[0]) {
      case "allowComments": f = JsonReadFeature.ALLOW_JAVA_COMMENTS; break;
      case "allowUnquotedFieldNames": f = JsonReadFeature.ALLOW_UNQUOTED_FIELD_NAMES; break;
      case "allowSingleQuotes": f = JsonReadFeature.ALLOW_SINGLE_QUOTES; break;
      case "allowNumericLeadingZeros": f = JsonReadFeature.ALLOW_LEADING_ZEROS_FOR_NUMBERS; break;
      case "allowNonNumericNumbers": f = JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS; break;
      case "allowBackslashEscapingAnyCharacter": f = JsonReadFeature.ALLOW_BACKSLASH_ESCAPING_ANY_CHARACTER; break;
      case "allowUnquotedControlChars": f = JsonReadFeature.ALLOW_UNESCAPED_CONTROL_CHARS; break;
      default: throw new IllegalArgumentException("unknown JSON parser option: " + kv[0]);
    }
    builder.configure(f, on);
  }
}
