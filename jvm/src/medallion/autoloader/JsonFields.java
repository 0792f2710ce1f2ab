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
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

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
 *
 * <p>A column written {@code <name>\u0002<type as JSON>} has a nested type with structs. Its value is walked
 * against the type: a key of a nested object that is no field of its struct (exact case, as {@code from_json}
 * matches) is left out of the raw text and returned among the unknown entries under its path, such as
 * {@code s.y} or {@code items[2].y}, so that it is rescued (or stops the flow as a new column) rather than dropped.
 * A nested value whose JSON kind its field's type cannot take (a string for an int, a number for a struct, ...) is
 * written as null and returned among the unknown entries under its path too, since {@code from_json} would turn it
 * into a null silently. Dates, timestamps and binary values are left to Spark.
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
  private transient DataType[] nested;
  private transient StringWriter sideBuffer;
  private transient JsonGenerator side;
  private transient Map<String, String> unknown;

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
    unknown = null;
    try (JsonParser parser = factory.createParser(record)) {
      if (parser.nextToken() != JsonToken.START_OBJECT) {
        return null;
      }
      JsonToken token;
      while ((token = parser.nextToken()) == JsonToken.FIELD_NAME) {
        String key = parser.currentName();
        parser.nextToken();
        Integer at = positions.get(caseSensitive ? key : key.toLowerCase(Locale.ROOT));
        if (at != null && nested[at] != null) {
          values[at] = checkedText(parser, nested[at], key);
        } else if (at != null) {
          values[at] = valueText(parser, copier, text);
        } else {
          addUnknown(key, valueText(parser, copier, text));
        }
      }
      if (token != JsonToken.END_OBJECT) {
        return null;
      }
    } catch (JsonProcessingException e) {
      resetCopier();
      return null;
    }
    Map<String, String> out = unknown;
    unknown = null;
    return RowFactory.create(values, out);
  }

  private void addUnknown(String key, String value) {
    if (unknown == null) {
      unknown = new LinkedHashMap<>();
    }
    unknown.put(key, value);
  }

  /** The compact text of a nested value, without the keys its type does not know (those go to the unknowns). */
  private String checkedText(JsonParser parser, DataType type, String path) throws IOException {
    if (!parser.currentToken().isStructStart()) {
      return valueText(parser, copier, text);  // a scalar: nothing nested to check
    }
    walk(parser, type, path);
    copier.flush();
    String out = text.toString();
    text.getBuffer().setLength(0);
    return out;
  }

  private void walk(JsonParser parser, DataType type, String path) throws IOException {
    JsonToken token = parser.currentToken();
    if (token == JsonToken.START_OBJECT && type instanceof StructType) {
      StructType struct = (StructType) type;
      copier.writeStartObject();
      while (parser.nextToken() == JsonToken.FIELD_NAME) {
        String key = parser.currentName();
        parser.nextToken();
        scala.Option<Object> index = struct.getFieldIndex(key);
        if (index.isEmpty()) {
          addUnknown(path + "." + key, valueText(parser, side, sideBuffer));
        } else {
          StructField field = struct.fields()[(Integer) index.get()];
          copier.writeFieldName(key);
          walkChecked(parser, field.dataType(), path + "." + key);
        }
      }
      copier.writeEndObject();
    } else if (token == JsonToken.START_ARRAY && type instanceof ArrayType) {
      DataType element = ((ArrayType) type).elementType();
      copier.writeStartArray();
      int i = 0;
      while (parser.nextToken() != JsonToken.END_ARRAY) {
        walkChecked(parser, element, path + "[" + i++ + "]");
      }
      copier.writeEndArray();
    } else if (token == JsonToken.START_OBJECT && type instanceof MapType) {
      DataType value = ((MapType) type).valueType();
      copier.writeStartObject();
      while (parser.nextToken() == JsonToken.FIELD_NAME) {
        String key = parser.currentName();
        copier.writeFieldName(key);
        parser.nextToken();
        walkChecked(parser, value, path + "." + key);
      }
      copier.writeEndObject();
    } else {
      copier.copyCurrentStructure(parser);
    }
  }

  /** A nested value: walked when its JSON kind fits its type, else null in the text and kept as unknown. */
  private void walkChecked(JsonParser parser, DataType type, String path) throws IOException {
    if (fits(parser, type)) {
      walk(parser, type, path);
    } else {
      addUnknown(path, valueText(parser, side, sideBuffer));
      copier.writeNull();
    }
  }

  /** Whether Spark's JSON reader can take the current value as the type (dates, timestamps, binary: assumed). */
  private static boolean fits(JsonParser parser, DataType type) throws IOException {
    JsonToken token = parser.currentToken();
    if (token == JsonToken.VALUE_NULL || type instanceof org.apache.spark.sql.types.StringType) {
      return true;
    }
    if (type instanceof StructType || type instanceof MapType) {
      return token == JsonToken.START_OBJECT;
    }
    if (type instanceof ArrayType) {
      return token == JsonToken.START_ARRAY;
    }
    if (type instanceof BooleanType) {
      return token == JsonToken.VALUE_TRUE || token == JsonToken.VALUE_FALSE;
    }
    if (type instanceof LongType || type instanceof IntegerType || type instanceof ShortType
        || type instanceof ByteType) {
      if (token != JsonToken.VALUE_NUMBER_INT) {
        return false;
      }
      JsonParser.NumberType kind = parser.getNumberType();
      if (type instanceof LongType) {
        return kind != JsonParser.NumberType.BIG_INTEGER;
      }
      if (kind != JsonParser.NumberType.INT) {
        return false;
      }
      int v = parser.getIntValue();
      return type instanceof IntegerType
          || (type instanceof ShortType ? v == (short) v : v == (byte) v);
    }
    if (type instanceof DoubleType || type instanceof FloatType) {
      if (token == JsonToken.VALUE_STRING) {
        String t = parser.getText();
        return t.equals("NaN") || t.matches("[+-]?(Infinity|INF)");
      }
      return token == JsonToken.VALUE_NUMBER_INT || token == JsonToken.VALUE_NUMBER_FLOAT;
    }
    if (type instanceof DecimalType) {
      return token == JsonToken.VALUE_NUMBER_INT || token == JsonToken.VALUE_NUMBER_FLOAT
          || token == JsonToken.VALUE_STRING;
    }
    return true;
  }

  /**
   * The current value's raw text, re-written by {@code out} (into {@code buffer}) unless it is a string, a null
   * or a canonical integer. Nested unknown values use a generator of their own, as the main one may be mid-value.
   */
  private static String valueText(JsonParser parser, JsonGenerator out, StringWriter buffer) throws IOException {
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
    out.copyCurrentStructure(parser);
    out.flush();
    String result = buffer.toString();
    buffer.getBuffer().setLength(0);
    return result;
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
    nested = new DataType[width];
    for (int i = 0; i < width; i++) {
      String[] column = parts[i + 2].split("\u0002", 2);
      positions.put(caseSensitive ? column[0] : column[0].toLowerCase(Locale.ROOT), i);
      nested[i] = column.length == 2 ? DataType.fromJson(column[1]) : null;
    }
    resetCopier();
  }

  private void resetCopier() throws IOException {
    text = new StringWriter();
    copier = factory.createGenerator(text);
    copier.setRootValueSeparator(null);
    sideBuffer = new StringWriter();
    side = factory.createGenerator(sideBuffer);
    side.setRootValueSeparator(null);
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
