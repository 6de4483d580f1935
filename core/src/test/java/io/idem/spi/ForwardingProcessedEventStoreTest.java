package io.idem.spi;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.DeadLetterCause;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

class ForwardingProcessedEventStoreTest {

  /** Every SPI method but openRun is forwarded: a method added to the SPI later fails this test until it is. */
  @Test
  void everyStoreMethodButOpenRunIsForwarded() {
    List<String> notForwarded = new ArrayList<>();
    for (Method m : ProcessedEventStore.class.getMethods()) {
      if (Modifier.isStatic(m.getModifiers()) || m.getName().equals("openRun")) {
        continue;
      }
      try {
        Method own = ForwardingProcessedEventStore.class.getDeclaredMethod(m.getName(), m.getParameterTypes());
        assertThat(own.getDeclaringClass()).isEqualTo(ForwardingProcessedEventStore.class);
      } catch (NoSuchMethodException e) {
        notForwarded.add(m.getName() + Arrays.toString(m.getParameterTypes()));
      }
    }
    assertThat(notForwarded).as("ProcessedEventStore methods ForwardingProcessedEventStore does not forward").isEmpty();
  }

  @Test
  void callsReachTheWrappedStoreWithTheirArgumentsAndAnswers() throws Exception {
    Recording inner = new Recording();
    ProcessedEventStore<String> store = new ForwardingProcessedEventStore<>(inner) {};
    IdempotencyKey key = new IdempotencyKey("g", "k-1", KeySource.HEADER);
    byte[] fp = new byte[32];

    TransactionWork<String, String> exclaim = tx -> tx + "!";
    assertThat(store.inTransaction(exclaim)).isEqualTo("tx!");
    assertThat(store.claim("tx", key, fp)).isEqualTo(ClaimResult.DUPLICATE);
    assertThat(store.claimAll("tx", List.of(key), List.of(fp))).containsExactly(ClaimResult.CONFLICT);
    store.confirmClaim("tx", key);
    store.confirmClaims("tx", List.of(key));
    assertThat(store.recordDeadLetter(key, new DeadLetterDecision(DeadLetterCause.NO_KEY, "d", null, null))).isTrue();
    assertThat(store.deadLetterDecision(key)).isNull();
    assertThat(store.releaseDeadLetter(key, "m-1")).isTrue();
    assertThat(store.startAttempt(key)).isEqualTo(7);
    store.clearAttempts("tx", key);
    assertThat(store.purge(Instant.EPOCH, 5)).isEqualTo(3);
    assertThat(store.isProcessed(key)).isTrue();

    assertThat(inner.calls).containsExactly("inTransaction", "claim tx k-1", "claimAll tx [k-1]",
        "confirmClaim tx k-1", "confirmClaims tx [k-1]", "recordDeadLetter k-1", "deadLetterDecision k-1", "releaseDeadLetter k-1 m-1",
        "startAttempt k-1", "clearAttempts tx k-1", "purge 5", "isProcessed k-1");
  }

  @Test
  void runsGoThroughTheWrappersOwnTransactions() throws Exception {
    Recording inner = new Recording();
    List<String> wrapped = new ArrayList<>();
    ProcessedEventStore<String> store = new ForwardingProcessedEventStore<>(inner) {
      @Override
      public <T> T inTransaction(TransactionWork<String, T> work) throws Exception {
        wrapped.add("wrapper");
        return super.inTransaction(work);
      }
    };
    try (TransactionRun<String> run = store.openRun()) {
      TransactionWork<String, String> same = tx -> tx;
      String answer = run.inTransaction(same, new IdempotencyKey("g", "k", KeySource.HEADER), new byte[32], () -> null);
      assertThat(answer).isEqualTo("tx");
    }
    assertThat(wrapped).containsExactly("wrapper");
    assertThat(inner.calls).containsExactly("inTransaction");
  }

  /** Answers each call with a value no SPI default gives, and records it. */
  private static final class Recording implements ProcessedEventStore<String> {
    final List<String> calls = new ArrayList<>();

    @Override
    public <T> T inTransaction(TransactionWork<String, T> work) throws Exception {
      calls.add("inTransaction");
      return work.run("tx");
    }

    @Override
    public ClaimResult claim(String tx, IdempotencyKey key, byte[] fingerprint) {
      calls.add("claim " + tx + " " + key.value());
      return ClaimResult.DUPLICATE;
    }

    @Override
    public List<ClaimResult> claimAll(String tx, List<IdempotencyKey> keys, List<byte[]> fingerprints) {
      calls.add("claimAll " + tx + " " + keys.stream().map(IdempotencyKey::value).toList());
      return List.of(ClaimResult.CONFLICT);
    }

    @Override
    public void confirmClaim(String tx, IdempotencyKey key) {
      calls.add("confirmClaim " + tx + " " + key.value());
    }

    @Override
    public void confirmClaims(String tx, List<IdempotencyKey> keys) {
      calls.add("confirmClaims " + tx + " " + keys.stream().map(IdempotencyKey::value).toList());
    }

    @Override
    public boolean recordDeadLetter(IdempotencyKey key, DeadLetterDecision decision) {
      calls.add("recordDeadLetter " + key.value());
      return true;
    }

    @Override
    public @Nullable DeadLetterDecision deadLetterDecision(IdempotencyKey key) {
      calls.add("deadLetterDecision " + key.value());
      return null;
    }

    @Override
    public boolean releaseDeadLetter(IdempotencyKey key, @Nullable String brokerMessageId) {
      calls.add("releaseDeadLetter " + key.value() + " " + brokerMessageId);
      return true;
    }

    @Override
    public int startAttempt(IdempotencyKey key) {
      calls.add("startAttempt " + key.value());
      return 7;
    }

    @Override
    public void clearAttempts(String tx, IdempotencyKey key) {
      calls.add("clearAttempts " + tx + " " + key.value());
    }

    @Override
    public int purge(Instant before, int maxRows) {
      calls.add("purge " + maxRows);
      return 3;
    }

    @Override
    public boolean isProcessed(IdempotencyKey key) {
      calls.add("isProcessed " + key.value());
      return true;
    }
  }
}
