package medallion.sources;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * Transactions in flight at an offset query, and the rule that reads their rows once when they end: the twin of
 * {@code framework/sources/inflight.py}, whose docstring has the rule and the argument that every row is read
 * once. Ids are 64-bit ({@code xid8}); a row's 32-bit {@code xmin} is compared with {@code id mod 2^32}.
 */
final class InFlight {
  static final long XID_SPACE = 1L << 32;
  static final Set<String> TRACKED_RELKINDS = Set.of("r", "p"); // tables and partitioned tables have an xmin

  private InFlight() {}

  /** Ids in flight at an offset query whose rows can lie above {@code after} (null: anywhere). */
  record Group(String after, List<Long> xids) implements Serializable {
    String json() {
      String value = after == null ? "null" : WatermarkOffset.quoted(after);
      StringBuilder ids = new StringBuilder();
      for (Long x : xids) {
        ids.append(ids.length() == 0 ? "" : ", ").append(x);
      }
      return "{\"after\": " + value + ", \"xids\": [" + ids + "]}";
    }
  }

  /** The ids in flight, sorted: the in-progress list of the snapshot's text and those found in progress after it. */
  static List<Long> inFlight(String snapshot, String running) {
    Set<Long> ids = new TreeSet<>();
    String[] parts = snapshot.split(":", -1);
    for (String text : new String[] {parts.length > 2 ? parts[2] : "", running == null ? "" : running}) {
      for (String x : text.split(",")) {
        if (!x.isBlank()) {
          ids.add(Long.parseLong(x.trim()));
        }
      }
    }
    return new ArrayList<>(ids);
  }

  /** The end offset's groups: ids still in flight keep their {@code after}; new ones get {@code startWatermark}. */
  static List<Group> carried(List<Group> start, String startWatermark, Collection<Long> now) {
    Set<Long> current = new TreeSet<>(now);
    Set<Long> seen = new TreeSet<>();
    List<Group> out = new ArrayList<>();
    for (Group group : start) {
      List<Long> kept = new ArrayList<>();
      for (Long x : group.xids) {
        if (current.contains(x)) {
          kept.add(x);
        }
      }
      seen.addAll(group.xids);
      if (!kept.isEmpty()) {
        out.add(new Group(group.after, kept));
      }
    }
    current.removeAll(seen);
    if (current.isEmpty()) {
      return out;
    }
    for (int i = 0; i < out.size(); i++) {
      if (Objects.equals(out.get(i).after, startWatermark)) {
        Set<Long> merged = new TreeSet<>(out.get(i).xids);
        merged.addAll(current);
        out.set(i, new Group(startWatermark, new ArrayList<>(merged)));
        return out;
      }
    }
    out.add(new Group(startWatermark, new ArrayList<>(current)));
    return out;
  }

  /** The groups of {@code start} restricted to the ids no longer in flight at {@code end}. */
  static List<Group> ended(List<Group> start, List<Group> end) {
    Set<Long> still = new TreeSet<>();
    end.forEach(g -> still.addAll(g.xids));
    List<Group> out = new ArrayList<>();
    for (Group group : start) {
      List<Long> gone = new ArrayList<>();
      for (Long x : group.xids) {
        if (!still.contains(x)) {
          gone.add(x);
        }
      }
      if (!gone.isEmpty()) {
        out.add(new Group(group.after, gone));
      }
    }
    return out;
  }

  /** The ids as a SQL {@code xid[]} of their 32-bit values, for {@code xmin = ANY (...)}. */
  static String xidArray(Collection<Long> xids) {
    StringBuilder out = new StringBuilder();
    for (Long x : new TreeSet<>(xids)) {
      out.append(out.length() == 0 ? "" : ",").append(Long.remainderUnsigned(x, XID_SPACE));
    }
    return "CAST('{" + out + "}' AS xid[])";
  }

  /** The condition that leaves out the rows of ids in flight (null when there are none). */
  static String excluded(List<Group> groups) {
    List<Long> xids = new ArrayList<>();
    groups.forEach(g -> xids.addAll(g.xids));
    return xids.isEmpty() ? null : "NOT (xmin = ANY (" + xidArray(xids) + "))";
  }

  /** Part 2 of a batch: the rows of the ids that ended, each group above its {@code after} and at most {@code upper}. */
  static String endedCondition(List<Group> groups, PgColumn column, String upper) {
    StringBuilder out = new StringBuilder();
    String col = column.quoted();
    for (Group group : groups) {
      String lower = group.after == null ? "" : col + " > " + Pg.typed(group.after, column) + " AND ";
      out.append(out.length() == 0 ? "" : " OR ").append("(").append(lower).append(col).append(" <= ")
          .append(upper).append(" AND xmin = ANY (").append(xidArray(group.xids)).append("))");
    }
    return out.toString();
  }
}
