package io.idem.testkit;

import io.idem.IdempotencyKey;
import io.idem.fixtures.PostgresFixture;
import io.idem.spi.ClaimResult;
import io.idem.spi.ProcessedEventStore;
import io.idem.spi.TransactionWork;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Instant;
import javax.sql.DataSource;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;

/**
 * The adapter kit against {@link FakeBroker}s, one class per {@link FakeBroker.Fault}: nested, so
 * the build does not run them on their own; {@link AdapterKitRejectsWrongAdaptersTest} does.
 */
final class FakeAdapters {
  private FakeAdapters() {}

  private static DataSource dataSource;

  static synchronized DataSource shared() {
    if (dataSource == null) {
      dataSource = PostgresFixture.shared().newSchema("adapter_kit_self_test");
    }
    return dataSource;
  }

  /** The smallest right SQL store: {@code INSERT … ON CONFLICT DO NOTHING}, the row count decides. */
  static final class SqlStore implements ProcessedEventStore<SqlSession> {
    private final SqlSessionFactory sessions;

    SqlStore(SqlSessionFactory sessions) throws Exception {
      this.sessions = sessions;
      try (SqlSession s = sessions.openSession(true); Statement st = s.getConnection().createStatement()) {
        st.execute("CREATE TABLE IF NOT EXISTS kit_markers (grp text, k text, fp bytea NOT NULL,"
            + " at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (grp, k))");
      }
    }

    @Override
    public <T> T inTransaction(TransactionWork<SqlSession, T> work) throws Exception {
      try (SqlSession session = sessions.openSession(false)) {
        T result;
        try {
          result = work.run(session);
        } catch (Throwable t) {
          session.getConnection().rollback();
          throw t;
        }
        session.getConnection().commit();
        return result;
      }
    }

    @Override
    public ClaimResult claim(SqlSession tx, IdempotencyKey key, byte[] fingerprint) {
      try (PreparedStatement insert = tx.getConnection().prepareStatement(
          "INSERT INTO kit_markers (grp, k, fp) VALUES (?, ?, ?) ON CONFLICT DO NOTHING")) {
        insert.setString(1, key.consumerGroup());
        insert.setString(2, key.value());
        insert.setBytes(3, fingerprint);
        if (insert.executeUpdate() == 1) {
          return ClaimResult.CLAIMED;
        }
        try (PreparedStatement read = tx.getConnection().prepareStatement(
            "SELECT fp FROM kit_markers WHERE grp = ? AND k = ?")) {
          read.setString(1, key.consumerGroup());
          read.setString(2, key.value());
          try (ResultSet rs = read.executeQuery()) {
            rs.next();
            return java.util.Arrays.equals(rs.getBytes(1), fingerprint) ? ClaimResult.DUPLICATE : ClaimResult.CONFLICT;
          }
        }
      } catch (java.sql.SQLException e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    public int purge(Instant processedBefore, int maxRows) {
      return 0;
    }

    @Override
    public boolean isProcessed(IdempotencyKey key) {
      try (SqlSession s = sessions.openSession(true);
          PreparedStatement ps = s.getConnection().prepareStatement(
              "SELECT count(*) FROM kit_markers WHERE grp = ? AND k = ?")) {
        ps.setString(1, key.consumerGroup());
        ps.setString(2, key.value());
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return rs.getInt(1) > 0;
        }
      } catch (java.sql.SQLException e) {
        throw new IllegalStateException(e);
      }
    }
  }

  abstract static class Kit extends BrokerAdapterCompatibilityKit {
    private final FakeBroker.Fault fault;

    Kit(FakeBroker.Fault fault) {
      this.fault = fault;
    }

    @Override
    protected DataSource dataSource() {
      return shared();
    }

    @Override
    protected ProcessedEventStore<SqlSession> store(SqlSessionFactory sessions) {
      try {
        return new SqlStore(sessions);
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    protected BrokerHarness harness(String name) {
      return new FakeBroker(name, fault);
    }

    /** What the kit waits for at most: a wrong adapter shows itself in seconds in memory. */
    @Override
    protected java.time.Duration timeout() {
      return java.time.Duration.ofSeconds(4);
    }
  }

  static final class Correct extends Kit {
    Correct() {
      super(FakeBroker.Fault.NONE);
    }
  }

  static final class AcksBeforeCommit extends Kit {
    AcksBeforeCommit() {
      super(FakeBroker.Fault.ACKS_BEFORE_COMMIT);
    }
  }

  static final class CountsStoreOutageAsAttempt extends Kit {
    CountsStoreOutageAsAttempt() {
      super(FakeBroker.Fault.COUNTS_STORE_OUTAGE_AS_ATTEMPT);
    }
  }

  static final class IgnoresRetryDelay extends Kit {
    IgnoresRetryDelay() {
      super(FakeBroker.Fault.IGNORES_RETRY_DELAY);
    }
  }

  static final class CloseAbandonsInFlight extends Kit {
    CloseAbandonsInFlight() {
      super(FakeBroker.Fault.CLOSE_ABANDONS_IN_FLIGHT);
    }
  }
}
