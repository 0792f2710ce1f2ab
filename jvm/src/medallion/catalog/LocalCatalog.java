package medallion.catalog;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.catalyst.analysis.NamespaceAlreadyExistsException;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.NonEmptyNamespaceException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.FunctionCatalog;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.NamespaceChange;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.StagingTableCatalog;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableCatalogCapability;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.catalog.TableInfo;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.catalog.V1Table;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.execution.datasources.jdbc.JDBCOptions;
import org.apache.spark.sql.execution.datasources.jdbc.JDBCRelation;
import org.apache.spark.sql.execution.datasources.v2.csv.CSVDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.jdbc.JDBCTable;
import org.apache.spark.sql.execution.datasources.v2.json.JsonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.orc.OrcDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.text.TextDataSourceV2;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.jdk.javaapi.CollectionConverters;

/**
 * One Unity Catalog catalog on a local machine: Spark's catalog plugin for {@code catalog.schema.table} names,
 * configured by the framework as {@code spark.sql.catalog.<catalog>} for every catalog a pipeline names
 * ({@code framework/runner/catalogs.py}).
 *
 * <p>Spark's session catalog ({@code spark_catalog}, Delta's {@code DeltaCatalog} here) has one level of
 * namespace. This catalog keeps its schemas there as databases named {@code <catalog>__<schema>} (the option
 * {@code database-prefix} overrides {@code <catalog>__}; {@code hive_metastore} has none) and hands every call to
 * the session catalog with the identifier translated, so tables are Delta's own (reads, streaming reads, writes,
 * MERGE, time travel, DESCRIBE), and each schema's tables are listed under the catalog's name, without the prefix.
 *
 * <p>Functions likewise: {@code main.util.f(x)} loads the session catalog's persistent function
 * {@code main__util.f} (a SQL function or a JVM UDF), which Spark invokes as its own (a {@code V1Function}), so
 * SQL functions resolve under three-part names. Spark 4.2's {@code FunctionCatalog} cannot create functions:
 * {@code CREATE FUNCTION main.util.f} is given the session catalog's name by the framework
 * ({@code framework/sql/functions.py}).
 */
public final class LocalCatalog implements StagingTableCatalog, SupportsNamespaces, FunctionCatalog {
    private String name;

    @Override
    public void initialize(String name, CaseInsensitiveStringMap options) {
        this.name = name;
    }

    @Override
    public String name() {
        return name;
    }

    /**
     * The database prefix of this catalog's schemas, read from the session's settings at each call: Spark keeps a
     * catalog plugin for the session's life, and in a warm session ({@code medallion serve}) a later pipeline may
     * map the catalog otherwise (its own catalog is the session catalog under its name, another's has
     * {@code <catalog>__}); the framework sets {@code spark.sql.catalog.<name>.database-prefix} (or unsets it: the
     * default) at every update ({@code framework/runner/catalogs.py}).
     */
    private String prefix() {
        String key = "spark.sql.catalog." + name + ".database-prefix";
        String value = SparkSession.active().sessionState().conf().getConfString(key, null);
        return value != null ? value : name + "__";
    }

    @Override
    public String[] defaultNamespace() {
        return new String[] {"default"};
    }

    private CatalogPlugin session() {
        return SparkSession.active().sessionState().catalogManager().v2SessionCatalog();
    }

    private TableCatalog tables() {
        return (TableCatalog) session();
    }

    private SupportsNamespaces namespaces() {
        return (SupportsNamespaces) session();
    }

    private StagingTableCatalog staging() {
        return (StagingTableCatalog) session();
    }

    /** The session catalog's database of {@code namespace} (one part: a schema of this catalog). */
    private String[] database(String[] namespace) throws NoSuchNamespaceException {
        if (namespace.length != 1) {
            throw new NoSuchNamespaceException(namespace);
        }
        return new String[] {prefix() + namespace[0]};
    }

    private Identifier local(Identifier ident) throws NoSuchTableException {
        if (ident.namespace().length != 1) {
            throw new NoSuchTableException(ident);
        }
        return Identifier.of(new String[] {prefix() + ident.namespace()[0]}, ident.name());
    }

    private Identifier localForCreate(Identifier ident) throws NoSuchNamespaceException {
        return Identifier.of(database(ident.namespace()), ident.name());
    }

    /** Unity Catalog's default table format: a table created without {@code USING} is a Delta table. */
    private static Map<String, String> delta(Map<String, String> properties) {
        if (properties.containsKey(TableCatalog.PROP_PROVIDER)) {
            return properties;
        }
        Map<String, String> out = new HashMap<>(properties);
        out.put(TableCatalog.PROP_PROVIDER, "delta");
        return out;
    }

    private static TableInfo delta(TableInfo info) {
        if (info.properties().containsKey(TableCatalog.PROP_PROVIDER)) {
            return info;
        }
        return new TableInfo.Builder().withColumns(info.columns()).withProperties(delta(info.properties()))
            .withPartitions(info.partitions()).withConstraints(info.constraints()).build();
    }

    // ---------------------------------------------------------------------------------------- namespaces
    @Override
    public String[][] listNamespaces() throws NoSuchNamespaceException {
        List<String[]> out = new ArrayList<>();
        for (String[] ns : namespaces().listNamespaces()) {
            if (ns.length == 1 && ns[0].startsWith(prefix()) && ns[0].length() > prefix().length()) {
                out.add(new String[] {ns[0].substring(prefix().length())});
            }
        }
        return out.toArray(new String[0][]);
    }

    @Override
    public String[][] listNamespaces(String[] namespace) throws NoSuchNamespaceException {
        if (namespace.length == 0) {
            return listNamespaces();
        }
        namespaces().listNamespaces(database(namespace));
        return new String[0][];
    }

    @Override
    public boolean namespaceExists(String[] namespace) {
        return namespace.length == 1 && namespaces().namespaceExists(new String[] {prefix() + namespace[0]});
    }

    @Override
    public Map<String, String> loadNamespaceMetadata(String[] namespace) throws NoSuchNamespaceException {
        return namespaces().loadNamespaceMetadata(database(namespace));
    }

    @Override
    public void createNamespace(String[] namespace, Map<String, String> metadata)
            throws NamespaceAlreadyExistsException {
        if (namespace.length != 1) {
            throw new IllegalArgumentException("a schema of catalog " + name + " has one part: "
                + String.join(".", namespace));
        }
        namespaces().createNamespace(new String[] {prefix() + namespace[0]}, metadata);
    }

    @Override
    public void alterNamespace(String[] namespace, NamespaceChange... changes) throws NoSuchNamespaceException {
        namespaces().alterNamespace(database(namespace), changes);
    }

    @Override
    public boolean dropNamespace(String[] namespace, boolean cascade)
            throws NoSuchNamespaceException, NonEmptyNamespaceException {
        return namespaces().dropNamespace(database(namespace), cascade);
    }

    // ---------------------------------------------------------------------------------------- tables
    @Override
    public Set<TableCatalogCapability> capabilities() {
        return tables().capabilities();
    }

    @Override
    public Identifier[] listTables(String[] namespace) throws NoSuchNamespaceException {
        Identifier[] found = tables().listTables(database(namespace));
        Identifier[] out = new Identifier[found.length];
        for (int i = 0; i < found.length; i++) {
            out[i] = Identifier.of(namespace, found[i].name());
        }
        return out;
    }

    @Override
    public Table loadTable(Identifier ident) throws NoSuchTableException {
        return readable(tables().loadTable(local(ident)));
    }

    /**
     * A file table (CSV, JSON, Parquet, ORC, text) as Spark's own data source V2 table over its location: Spark
     * reads a table the session catalog keeps in its V1 form only through the session catalog itself.
     */
    private static Table readable(Table table) {
        if (!(table instanceof V1Table)) {
            return table;
        }
        CatalogTable v1 = ((V1Table) table).catalogTable();
        String provider = v1.provider().isDefined() ? v1.provider().get().toLowerCase(Locale.ROOT) : "";
        if (JDBC.contains(provider)) {
            return jdbc(v1);
        }
        TableProvider source = fileSource(provider);
        if (source == null) {
            throw new UnsupportedOperationException("table " + v1.identifier().unquotedString() + " (" + provider
                + ") can be read only through a one- or two-part name locally: a Unity Catalog name reads Delta, "
                + "file and JDBC tables");
        }
        Map<String, String> options = new HashMap<>(CollectionConverters.asJava(v1.storage().properties()));
        if (v1.storage().locationUri().isDefined()) {
            options.put("path", v1.storage().locationUri().get().toString());
        }
        StructType schema = v1.schema().isEmpty()
            ? source.inferSchema(new CaseInsensitiveStringMap(options)) : v1.schema();
        return source.getTable(schema, new Transform[0], options);
    }

    private static final Set<String> JDBC = Set.of("jdbc", "org.apache.spark.sql.jdbc",
        "org.apache.spark.sql.execution.datasources.jdbc.jdbcrelationprovider");

    /**
     * A JDBC table (a spec's {@code tables:} entry with {@code format: jdbc}) as Spark's own data source V2 JDBC
     * table over the same options (url, dbtable or query, user, ...), as {@code JDBCTableCatalog} gives it: its
     * reads push filters and columns down as the V1 relation's do.
     */
    private static Table jdbc(CatalogTable v1) {
        Map<String, String> options = new HashMap<>(CollectionConverters.asJava(v1.storage().properties()));
        scala.collection.immutable.Map<String, String> scalaOptions =
            scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(options));
        JDBCOptions jdbcOptions = new JDBCOptions(scalaOptions);
        StructType schema = v1.schema().isEmpty()
            ? JDBCRelation.getSchema(SparkSession.active().sessionState().conf().resolver(), jdbcOptions)
            : v1.schema();
        Identifier ident = Identifier.of(new String[] {v1.identifier().database().getOrElse(() -> "default")},
            v1.identifier().table());
        return JDBCTable.apply(ident, schema, jdbcOptions, JDBCTable.apply$default$4());
    }

    private static TableProvider fileSource(String provider) {
        switch (provider) {
            case "csv": return new CSVDataSourceV2();
            case "json": return new JsonDataSourceV2();
            case "parquet": return new ParquetDataSourceV2();
            case "orc": return new OrcDataSourceV2();
            case "text": return new TextDataSourceV2();
            default: return null;
        }
    }

    @Override
    public Table loadTable(Identifier ident, String version) throws NoSuchTableException {
        return readable(tables().loadTable(local(ident), version));
    }

    @Override
    public Table loadTable(Identifier ident, long timestamp) throws NoSuchTableException {
        return readable(tables().loadTable(local(ident), timestamp));
    }

    @Override
    public void invalidateTable(Identifier ident) {
        if (ident.namespace().length == 1) {
            tables().invalidateTable(Identifier.of(new String[] {prefix() + ident.namespace()[0]}, ident.name()));
        }
    }

    @Override
    public boolean tableExists(Identifier ident) {
        return ident.namespace().length == 1
            && tables().tableExists(Identifier.of(new String[] {prefix() + ident.namespace()[0]}, ident.name()));
    }

    @Override
    @SuppressWarnings("deprecation")
    public Table createTable(Identifier ident, StructType schema, Transform[] partitions,
                             Map<String, String> properties)
            throws TableAlreadyExistsException, NoSuchNamespaceException {
        return tables().createTable(localForCreate(ident), schema, partitions, delta(properties));
    }

    @Override
    public Table createTable(Identifier ident, Column[] columns, Transform[] partitions,
                             Map<String, String> properties)
            throws TableAlreadyExistsException, NoSuchNamespaceException {
        return tables().createTable(localForCreate(ident), columns, partitions, delta(properties));
    }

    @Override
    public Table createTable(Identifier ident, TableInfo info)
            throws TableAlreadyExistsException, NoSuchNamespaceException {
        return tables().createTable(localForCreate(ident), delta(info));
    }

    @Override
    public Table alterTable(Identifier ident, TableChange... changes) throws NoSuchTableException {
        return tables().alterTable(local(ident), changes);
    }

    @Override
    public boolean dropTable(Identifier ident) {
        return ident.namespace().length == 1
            && tables().dropTable(Identifier.of(new String[] {prefix() + ident.namespace()[0]}, ident.name()));
    }

    @Override
    public boolean purgeTable(Identifier ident) {
        return ident.namespace().length == 1
            && tables().purgeTable(Identifier.of(new String[] {prefix() + ident.namespace()[0]}, ident.name()));
    }

    @Override
    public void renameTable(Identifier from, Identifier to)
            throws NoSuchTableException, TableAlreadyExistsException {
        tables().renameTable(local(from), local(to));
    }

    // ---------------------------------------------------------------------------------------- staged (CTAS, RTAS)
    @Override
    public StagedTable stageCreate(Identifier ident, TableInfo info)
            throws TableAlreadyExistsException, NoSuchNamespaceException {
        return staging().stageCreate(localForCreate(ident), delta(info));
    }

    @Override
    public StagedTable stageReplace(Identifier ident, TableInfo info)
            throws NoSuchNamespaceException, NoSuchTableException {
        return staging().stageReplace(localForCreate(ident), delta(info));
    }

    @Override
    public StagedTable stageCreateOrReplace(Identifier ident, TableInfo info) throws NoSuchNamespaceException {
        return staging().stageCreateOrReplace(localForCreate(ident), delta(info));
    }

    @Override
    public StagedTable stageCreate(Identifier ident, Column[] columns, Transform[] partitions,
                                   Map<String, String> properties)
            throws TableAlreadyExistsException, NoSuchNamespaceException {
        return staging().stageCreate(localForCreate(ident), columns, partitions, delta(properties));
    }

    @Override
    public StagedTable stageReplace(Identifier ident, Column[] columns, Transform[] partitions,
                                    Map<String, String> properties)
            throws NoSuchNamespaceException, NoSuchTableException {
        return staging().stageReplace(localForCreate(ident), columns, partitions, delta(properties));
    }

    @Override
    public StagedTable stageCreateOrReplace(Identifier ident, Column[] columns, Transform[] partitions,
                                            Map<String, String> properties) throws NoSuchNamespaceException {
        return staging().stageCreateOrReplace(localForCreate(ident), columns, partitions, delta(properties));
    }

    // ---------------------------------------------------------------------------------------- functions
    private FunctionCatalog functions() {
        return (FunctionCatalog) session();
    }

    @Override
    public Identifier[] listFunctions(String[] namespace) throws NoSuchNamespaceException {
        Identifier[] found = functions().listFunctions(database(namespace));
        Identifier[] out = new Identifier[found.length];
        for (int i = 0; i < found.length; i++) {
            out[i] = Identifier.of(namespace, found[i].name());
        }
        return out;
    }

    @Override
    public UnboundFunction loadFunction(Identifier ident) throws NoSuchFunctionException {
        if (ident.namespace().length != 1) {
            throw new NoSuchFunctionException(ident);
        }
        return functions().loadFunction(
            Identifier.of(new String[] {prefix() + ident.namespace()[0]}, ident.name()));
    }
}
