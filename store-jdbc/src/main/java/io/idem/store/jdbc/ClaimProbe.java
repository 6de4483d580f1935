package io.idem.store.jdbc;

import static io.idem.store.jdbc.MyBatisProcessedEventStore.MIGRATION_RESOURCE;

import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.StoreUnavailableException;
import io.idem.spi.ClaimResult;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Map;
import java.util.UUID;
import org.apache.ibatis.session.SqlSession;

/**
 * The last start-up check: the store's own claim, run twice in a transaction of its own that is
 * always rolled back — a new key must be claimed, the same key again must be a duplicate — on the
 * largest values a real claim can bring: a consumer group of {@value
 * IdempotencyKey#MAX_CONSUMER_GROUP_LENGTH} characters, a key of {@value IdempotencyKey#MAX_LENGTH}
 * characters that take three bytes each in UTF-8, the longest {@link KeySource} name and a real
 * SHA-256. A column too short or of another type, a NOT NULL column the claim does not fill (no
 * default), a missing privilege, a trigger that fails or discards the row, a database encoding that
 * cannot hold the key: each would fail every claim at run time, where it looks like an outage and
 * is retried for ever, or would skip every message. Refused here, quoting the database. Deferred
 * constraints, which only a commit would check, are not seen.
 */
final class ClaimProbe {
  /**
   * No real claim can have this consumer group: it starts with U+0001, and {@link IdempotencyKey}
   * refuses control characters in a group. So the probe row never meets a real one: it cannot be
   * taken for a message's marker, never waits for a real claim of the same key nor makes one wait,
   * and its first claim always takes the insert path (a conflict would skip the NOT NULL checks and
   * the triggers). The random part of the key keeps instances that start together from waiting on
   * each other.
   */
  private static final String GROUP =
      fill("\u0001idem-start-up-probe-", "-", IdempotencyKey.MAX_CONSUMER_GROUP_LENGTH);

  /** Three UTF-8 bytes each: the most bytes a key of {@code MAX_LENGTH} chars can have. */
  private static final String WIDE = "\u20ac\u9375\u2713";

  private static final String KEY_SOURCE = Arrays.stream(KeySource.values()).map(Enum::name)
      .max(Comparator.comparingInt(String::length)).orElseThrow();

  private ClaimProbe() {}

  /**
   * Claims twice and rolls back in {@code session}, which the other checks have used; ends their
   * transaction first.
   *
   * @throws IllegalStateException when the table refuses, discards or garbles the claim
   * @throws StoreUnavailableException when the database failed in a way worth retrying
   */
  static void run(
      SqlSession session, ClaimStatement claims, String namespace, TableName table) {
    String key =
        fill("idem-start-up-probe-" + UUID.randomUUID() + "-", WIDE, IdempotencyKey.MAX_LENGTH);
    byte[] fingerprint = sha256(key);
    ClaimResult first = null;
    ClaimResult again = null;
    RuntimeException failure = null;
    try {
      session.rollback(true);
      first = claims.claim(session, GROUP, key, KEY_SOURCE, fingerprint);
      again = claims.claim(session, GROUP, key, KEY_SOURCE, fingerprint);
    } catch (RuntimeException e) {
      failure = refused(table, e);
    }
    try {
      session.rollback(true); // never commit: the probe leaves no row
    } catch (RuntimeException e) {
      if (failure == null) {
        failure = StartupChecks.failure("could not roll back the probe claim", e);
      } else {
        failure.addSuppressed(e);
      }
    }
    if (failure != null) {
      throw failure;
    }
    String cannot = "processed-events table " + table.qualified() + " cannot take a claim: ";
    if (first != ClaimResult.CLAIMED) {
      throw new IllegalStateException(cannot + "the claim of a new key inserted no row (a trigger or"
          + " rule that discards rows?), so every message would be skipped as a duplicate; create it"
          + " with " + MIGRATION_RESOURCE);
    }
    if (again == ClaimResult.CONFLICT) {
      Map<String, String> column = Map.of("table", table.qualified(), "column", "payload_sha256");
      String type = StartupChecks.query(() -> session.selectOne(namespace + ".columnType", column),
          "could not read the type of " + table.qualified() + ".payload_sha256");
      throw new IllegalStateException(cannot + "payload_sha256 does not give back the SHA-256 written"
          + " to it (it is " + type + ", not bytea), so every redelivery would be reported as a"
          + " conflict instead of a duplicate; create it with " + MIGRATION_RESOURCE);
    }
    if (again != ClaimResult.DUPLICATE) {
      throw new IllegalStateException(cannot + "a second claim of the same key was " + again
          + ", not a duplicate; create it with " + MIGRATION_RESOURCE);
    }
  }

  private static RuntimeException refused(TableName table, RuntimeException e) {
    String message = TransientFailures.rootMessage(e);
    if (TransientFailures.isTransient(e)) {
      return new StoreUnavailableException("could not run a probe claim on processed-events table "
          + table.qualified() + ": " + message, e);
    }
    return new IllegalStateException("processed-events table " + table.qualified() + " cannot take a"
        + " claim of the longest consumer group and key: " + message + "; its columns' types, lengths,"
        + " NOT NULL constraints and defaults, and its triggers, must let the claim of "
        + MIGRATION_RESOURCE + " through (create the table with it)", e);
  }

  private static String fill(String prefix, String filler, int length) {
    StringBuilder value = new StringBuilder(prefix);
    while (value.length() < length) {
      value.append(filler.charAt(value.length() % filler.length()));
    }
    return value.toString();
  }

  private static byte[] sha256(String value) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(value.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform must support SHA-256", e);
    }
  }
}
