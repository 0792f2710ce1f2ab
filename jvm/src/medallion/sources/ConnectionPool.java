package medallion.sources;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Deque;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Idle connections kept per database and user for the next offset query, catalog lookup or range read in this JVM
 * (the driver, and in local mode the executors too), so that an incremental update does not pay for four
 * connections and their authentication. A connection is checked before reuse, returned only when its work ended
 * well, reset to autocommit, and closed after {@value #IDLE_SECONDS} s unused by a daemon thread.
 */
final class ConnectionPool {
  static final int IDLE_SECONDS = 30;
  private static final int MAX_IDLE_PER_KEY = 4;
  private static final Map<String, Deque<Idle>> IDLE = new ConcurrentHashMap<>();
  private static final ScheduledExecutorService REAPER = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "medallion-jdbc-pool-reaper");
    t.setDaemon(true);
    return t;
  });

  static {
    REAPER.scheduleWithFixedDelay(ConnectionPool::closeIdle, IDLE_SECONDS, 5, TimeUnit.SECONDS);
  }

  private ConnectionPool() {}

  private record Idle(Connection connection, long since) {}

  private static String key(IncrementalOptions options) {
    return options.url + '\0' + options.user + '\0' + options.password;
  }

  /** A connection in a UTC session: an idle one that still answers, else a new one. */
  static Connection borrow(IncrementalOptions options) {
    Deque<Idle> idle = IDLE.get(key(options));
    for (Idle next = idle == null ? null : idle.pollFirst(); next != null; next = idle.pollFirst()) {
      try {
        if (next.connection.isValid(2)) {
          return next.connection;
        }
      } catch (SQLException e) {
        // not usable: closed below
      }
      closeQuietly(next.connection);
    }
    return Pg.connect(options);
  }

  /** Hand back a connection whose work ended well (others are closed: see {@link #discard}). */
  static void giveBack(IncrementalOptions options, Connection connection) {
    try {
      if (connection.isClosed()) {
        return;
      }
      if (!connection.getAutoCommit()) {
        connection.rollback(); // ends a read's transaction and its cursor
        connection.setAutoCommit(true);
      }
    } catch (SQLException e) {
      closeQuietly(connection);
      return;
    }
    Deque<Idle> idle = IDLE.computeIfAbsent(key(options), k -> new ConcurrentLinkedDeque<>());
    idle.addFirst(new Idle(connection, System.nanoTime()));
    while (idle.size() > MAX_IDLE_PER_KEY) {
      Idle oldest = idle.pollLast();
      if (oldest != null) {
        closeQuietly(oldest.connection);
      }
    }
  }

  /** {@code action} on a pooled connection, given back when it returns and closed when it throws. */
  static <T> T with(IncrementalOptions options, java.util.function.Function<Connection, T> action) {
    Connection connection = borrow(options);
    T result;
    try {
      result = action.apply(connection);
    } catch (RuntimeException e) {
      discard(connection);
      throw e;
    }
    giveBack(options, connection);
    return result;
  }

  /** Close a connection that failed or was cut: it never goes back to the pool. */
  static void discard(Connection connection) {
    closeQuietly(connection);
  }

  private static void closeIdle() {
    long limit = System.nanoTime() - TimeUnit.SECONDS.toNanos(IDLE_SECONDS);
    for (Deque<Idle> idle : IDLE.values()) {
      for (Iterator<Idle> it = idle.iterator(); it.hasNext();) {
        Idle next = it.next();
        if (next.since < limit && idle.removeFirstOccurrence(next)) {
          closeQuietly(next.connection);
        }
      }
    }
  }

  private static void closeQuietly(Connection connection) {
    try {
      connection.close();
    } catch (SQLException e) {
      // a connection that already broke has nothing left to close
    }
  }
}
