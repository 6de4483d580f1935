package io.idem.testkit;

import io.idem.BrokerConsumer;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.spi.Acknowledgement;
import io.idem.spi.ForwardingProcessedEventStore;
import io.idem.spi.ProcessedEventStore;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;

/**
 * A broker that is a PostgreSQL table, so that it outlives the crash matrix's child JVMs without a
 * broker server: {@link CrashMatrixRejectsWrongAdaptersTest}'s adapter. A delivery leases a row
 * for {@value #LEASE_MILLIS} ms (a crashed consumer's rows come back after it) and counts it; an
 * ack marks the row done; a retry moves the lease; a dead letter copies the row into the
 * dead-letter table, then marks it done; a delivery after the first is flagged as a possible
 * redelivery, and the store counts such runs. {@link AcksBeforeCommit} and {@link
 * NoRedeliveryFlag} are the wrong adapters.
 */
final class TableBroker {
  static final int LEASE_MILLIS = 2000;

  private TableBroker() {}

  static void createTables(DataSource dataSource) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS crash_kit_attempts (grp text, k text, n int NOT NULL,"
          + " PRIMARY KEY (grp, k))");
      s.execute("CREATE TABLE IF NOT EXISTS crash_kit_queue (id bigserial PRIMARY KEY, dest text NOT NULL,"
          + " names text[] NOT NULL, vals text[] NOT NULL, payload bytea NOT NULL,"
          + " deliveries int NOT NULL DEFAULT 0, lease_until timestamptz, done boolean NOT NULL DEFAULT false)");
      s.execute("CREATE TABLE IF NOT EXISTS crash_kit_dlq (id bigserial PRIMARY KEY, dest text NOT NULL,"
          + " names text[] NOT NULL, vals text[] NOT NULL, payload bytea NOT NULL)");
    }
  }

  private static Map<String, String> headers(ResultSet rs) throws SQLException {
    String[] names = (String[]) rs.getArray("names").getArray();
    String[] values = (String[]) rs.getArray("vals").getArray();
    Map<String, String> headers = new LinkedHashMap<>();
    for (int i = 0; i < names.length; i++) {
      headers.put(names[i], values[i]);
    }
    return headers;
  }

  private static void insert(Connection c, String table, String dest, Map<String, String> headers, byte[] payload)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(
        "INSERT INTO " + table + " (dest, names, vals, payload) VALUES (?, ?, ?, ?)")) {
      Array names = c.createArrayOf("text", headers.keySet().toArray());
      Array values = c.createArrayOf("text", headers.values().toArray());
      ps.setString(1, dest);
      ps.setArray(2, names);
      ps.setArray(3, values);
      ps.setBytes(4, payload);
      ps.executeUpdate();
    }
  }

  /** The parent's view of one destination. */
  static final class Harness implements BrokerHarness {
    private final DataSource dataSource;
    private final String dest;

    Harness(DataSource dataSource, String dest) {
      this.dataSource = dataSource;
      this.dest = dest;
    }

    @Override
    public String destination() {
      return dest;
    }

    @Override
    public void publish(Map<String, String> headers, byte[] payload) {
      try (Connection c = dataSource.getConnection()) {
        insert(c, "crash_kit_queue", dest, headers, payload);
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    public <C> BrokerConsumer newConsumer(IdempotentConsumer<C> pipeline) {
      throw new UnsupportedOperationException("the consumers run in the crash matrix's child JVM");
    }

    @Override
    public List<DeadLetteredMessage> deadLetters() {
      List<DeadLetteredMessage> letters = new ArrayList<>();
      try (Connection c = dataSource.getConnection();
          PreparedStatement ps = c.prepareStatement("SELECT * FROM crash_kit_dlq WHERE dest = ? ORDER BY id")) {
        ps.setString(1, dest);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            letters.add(new DeadLetteredMessage(headers(rs), rs.getBytes("payload")));
          }
        }
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
      return letters;
    }

    @Override
    public long pendingCount() {
      try (Connection c = dataSource.getConnection();
          PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM crash_kit_queue WHERE dest = ? AND NOT done")) {
        ps.setString(1, dest);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return rs.getLong(1);
        }
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    public void close() {
      try (Connection c = dataSource.getConnection();
          PreparedStatement q = c.prepareStatement("DELETE FROM crash_kit_queue WHERE dest = ?");
          PreparedStatement d = c.prepareStatement("DELETE FROM crash_kit_dlq WHERE dest = ?")) {
        q.setString(1, dest);
        q.executeUpdate();
        d.setString(1, dest);
        d.executeUpdate();
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    }
  }

  /** The child's consumer: one thread, one row at a time. */
  static final class Consumer implements BrokerConsumer {
    private final DataSource dataSource;
    private final String dest;
    private final IdempotentConsumer<SqlSession> pipeline;
    private final boolean acksBeforeCommit;
    private final boolean flagsRedeliveries;
    private final CrashInjector crashes;
    private final boolean reasonHeaders;
    private final Thread worker = new Thread(this::run, "table-broker-consumer");
    private volatile boolean running;

    Consumer(DataSource dataSource, String dest, IdempotentConsumer<SqlSession> pipeline, boolean acksBeforeCommit,
        boolean flagsRedeliveries, CrashInjector crashes, boolean reasonHeaders) {
      this.crashes = crashes;
      this.reasonHeaders = reasonHeaders;
      this.dataSource = dataSource;
      this.dest = dest;
      this.pipeline = pipeline;
      this.acksBeforeCommit = acksBeforeCommit;
      this.flagsRedeliveries = flagsRedeliveries;
    }

    @Override
    public void start() {
      running = true;
      worker.start();
    }

    @Override
    public void close() {
      running = false;
      try {
        worker.join(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    @Override
    public boolean isRunning() {
      return running;
    }

    private void run() {
      while (running) {
        try {
          if (!deliverOne()) {
            Thread.sleep(50);
          }
        } catch (InterruptedException e) {
          return;
        } catch (Exception e) {
          e.printStackTrace(System.out);
        }
      }
    }

    private boolean deliverOne() throws SQLException {
      long id;
      InboundMessage message;
      try (Connection c = autoCommit();
          PreparedStatement ps = c.prepareStatement(
              "UPDATE crash_kit_queue SET deliveries = deliveries + 1,"
                  + " lease_until = now() + make_interval(secs => ?) WHERE id = (SELECT id FROM crash_kit_queue"
                  + " WHERE dest = ? AND NOT done AND (lease_until IS NULL OR lease_until < now())"
                  + " ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING *")) {
        ps.setDouble(1, LEASE_MILLIS / 1000.0);
        ps.setString(2, dest);
        try (ResultSet rs = ps.executeQuery()) {
          if (!rs.next()) {
            return false;
          }
          id = rs.getLong("id");
          int deliveries = rs.getInt("deliveries");
          message = InboundMessage.builder(dest, rs.getBytes("payload"))
              .headers(headers(rs))
              .brokerMessageId(Long.toString(id))
              .deliveryAttempt(deliveries)
              .unaccountedRedelivery(flagsRedeliveries && deliveries > 1)
              .receivedAt(Instant.now())
              .build();
        }
      }
      Acknowledgement acknowledgement = new RowAcknowledgement(id, message);
      if (acksBeforeCommit) {
        acknowledgement.ack(); // the bug: settled before the transaction ran
        pipeline.process(message, new Acknowledgement() {
          @Override
          public void ack() {}

          @Override
          public void retry(Duration delay) {}

          @Override
          public void deadLetter(DeadLetterReason reason) {}
        });
      } else {
        pipeline.process(message, acknowledgement);
      }
      return true;
    }

    private Connection autoCommit() throws SQLException {
      Connection c = dataSource.getConnection();
      c.setAutoCommit(true);
      return c;
    }

    private final class RowAcknowledgement implements Acknowledgement {
      private final long id;
      private final InboundMessage message;

      RowAcknowledgement(long id, InboundMessage message) {
        this.id = id;
        this.message = message;
      }

      @Override
      public void ack() {
        update("UPDATE crash_kit_queue SET done = true WHERE id = ?", 0);
      }

      @Override
      public void retry(Duration delay) {
        update("UPDATE crash_kit_queue SET lease_until = now() + make_interval(secs => ?) WHERE id = ?",
            delay.toMillis() / 1000.0);
      }

      @Override
      public void deadLetter(DeadLetterReason reason) {
        Map<String, String> headers = new LinkedHashMap<>(message.headers());
        if (reasonHeaders) {
          headers.putAll(reason.toHeaders());
        }
        try (Connection c = autoCommit()) {
          insert(c, "crash_kit_dlq", dest, headers, message.payload());
        } catch (SQLException e) {
          throw new IllegalStateException(e);
        }
        crashes.atBrokerOperation(CrashPoint.DEAD_LETTER_COPY_STORED, "insert crash_kit_dlq");
        ack();
      }

      private void update(String sql, double seconds) {
        try (Connection c = autoCommit(); PreparedStatement ps = c.prepareStatement(sql)) {
          int i = 1;
          if (sql.contains("make_interval")) {
            ps.setDouble(i++, seconds);
          }
          ps.setLong(i, id);
          ps.executeUpdate();
        } catch (SQLException e) {
          throw new IllegalStateException(e);
        }
      }
    }
  }

  /** A right adapter on the table broker, with the kit's pipeline. */
  public static final class Correct implements CrashMatrixConsumerFactory {
    public Correct() {}

    @Override
    public BrokerConsumer start(CrashMatrixContext context) throws Exception {
      return started(context, false);
    }
  }

  /** A wrong one: acks every delivery before the pipeline runs it. */
  public static final class AcksBeforeCommit implements CrashMatrixConsumerFactory {
    public AcksBeforeCommit() {}

    @Override
    public BrokerConsumer start(CrashMatrixContext context) throws Exception {
      return started(context, true, true);
    }
  }

  /** A wrong one: never flags a delivery as a possible redelivery, so process deaths go uncounted. */
  public static final class NoRedeliveryFlag implements CrashMatrixConsumerFactory {
    public NoRedeliveryFlag() {}

    @Override
    public BrokerConsumer start(CrashMatrixContext context) throws Exception {
      return started(context, false, false);
    }
  }

  /** A wrong one: its dead-letter copy is the bare message, without the reason's headers. */
  public static final class DeadLettersWithoutReason implements CrashMatrixConsumerFactory {
    public DeadLettersWithoutReason() {}

    @Override
    public BrokerConsumer start(CrashMatrixContext context) throws Exception {
      return started(context, false, true, false);
    }
  }

  private static BrokerConsumer started(CrashMatrixContext context, boolean acksBeforeCommit) throws Exception {
    return started(context, acksBeforeCommit, true);
  }

  private static BrokerConsumer started(CrashMatrixContext context, boolean acksBeforeCommit, boolean flags)
      throws Exception {
    return started(context, acksBeforeCommit, flags, true);
  }

  private static BrokerConsumer started(CrashMatrixContext context, boolean acksBeforeCommit, boolean flags,
      boolean reasonHeaders) throws Exception {
    Consumer consumer = new Consumer(context.dataSource(), context.destination(),
        context.kitPipeline(countingStore(context.sessions())), acksBeforeCommit, flags, context.crashInjector(),
        reasonHeaders);
    consumer.start();
    return consumer;
  }

  /** The kit's smallest SQL store plus attempt counts ({@code startAttempt}, {@code clearAttempts}). */
  private static ProcessedEventStore<SqlSession> countingStore(SqlSessionFactory sessions) throws Exception {
    return new ForwardingProcessedEventStore<SqlSession>(new FakeAdapters.SqlStore(sessions)) {
      @Override
      public int startAttempt(IdempotencyKey key) {
        try (SqlSession s = sessions.openSession(true);
            PreparedStatement ps = s.getConnection().prepareStatement(
                "INSERT INTO crash_kit_attempts (grp, k, n) VALUES (?, ?, 1) ON CONFLICT (grp, k)"
                    + " DO UPDATE SET n = crash_kit_attempts.n + 1 RETURNING n")) {
          ps.setString(1, key.consumerGroup());
          ps.setString(2, key.value());
          try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getInt(1);
          }
        } catch (SQLException e) {
          throw new IllegalStateException(e);
        }
      }

      @Override
      public void clearAttempts(SqlSession transaction, IdempotencyKey key) {
        try (PreparedStatement ps = transaction.getConnection().prepareStatement(
            "DELETE FROM crash_kit_attempts WHERE grp = ? AND k = ?")) {
          ps.setString(1, key.consumerGroup());
          ps.setString(2, key.value());
          ps.executeUpdate();
        } catch (SQLException e) {
          throw new IllegalStateException(e);
        }
      }
    };
  }
}
