package io.idem.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.spi.OutboxPublishResult.Status;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The default {@link OutboxPublisher#publishAll}: one by one, a key stops at its first failure. */
class OutboxPublisherTest {
  private static OutboxMessage row(long id, String orderingKey) {
    return new OutboxMessage(id, "k" + id, "dest", orderingKey,
        ("row " + id).getBytes(StandardCharsets.UTF_8), Map.of(), 1, Instant.EPOCH);
  }

  /** Publishes everything but the ids it is told to fail; records what it was asked to send. */
  private static final class Recording implements OutboxPublisher {
    final List<Long> attempted = new ArrayList<>();
    final Set<Long> failing;
    final Throwable failure;

    Recording(Set<Long> failing, Throwable failure) {
      this.failing = failing;
      this.failure = failure;
    }

    @Override
    public void publish(OutboxMessage message) throws Exception {
      attempted.add(message.id());
      if (failing.contains(message.id())) {
        if (failure instanceof Exception e) {
          throw e;
        }
        throw (Error) failure;
      }
    }
  }

  @Test
  void aFailureStopsItsOrderingKeyAndOtherKeysGoOn() throws Exception {
    IllegalStateException tooLarge = new IllegalStateException("too large");
    Recording publisher = new Recording(Set.of(2L), tooLarge);
    List<OutboxMessage> batch = List.of(row(1, "A"), row(2, "A"), row(3, "B"), row(4, "A"),
        row(5, null), row(6, "B"));

    List<OutboxPublishResult> results = publisher.publishAll(batch);

    assertThat(results).extracting(OutboxPublishResult::id).containsExactly(1L, 2L, 3L, 4L, 5L, 6L);
    assertThat(results).extracting(OutboxPublishResult::status).containsExactly(
        Status.SENT, Status.FAILED, Status.SENT, Status.SKIPPED, Status.SENT, Status.SENT);
    assertThat(results.get(1).failure()).isSameAs(tooLarge);
    assertThat(publisher.attempted).as("row 4 of the stopped key is not sent").containsExactly(1L, 2L, 3L, 5L, 6L);
  }

  @Test
  void anErrorIsTheRowsFailureAndUnorderedRowsAreIndependent() throws Exception {
    StackOverflowError error = new StackOverflowError();
    Recording publisher = new Recording(Set.of(1L), error);

    List<OutboxPublishResult> results = publisher.publishAll(List.of(row(1, null), row(2, null)));

    assertThat(results).extracting(OutboxPublishResult::status).containsExactly(Status.FAILED, Status.SENT);
    assertThat(results.get(0).failure()).isSameAs(error);
  }

  @Test
  void anInterruptEndsTheBatchUnattemptedAndKeepsTheFlag() throws Exception {
    Recording publisher = new Recording(Set.of(2L), new InterruptedException());
    try {
      List<OutboxPublishResult> results = publisher.publishAll(List.of(row(1, null), row(2, null), row(3, "C")));
      assertThat(results).extracting(OutboxPublishResult::status)
          .containsExactly(Status.SENT, Status.SKIPPED, Status.SKIPPED);
      assertThat(Thread.currentThread().isInterrupted()).isTrue();
      assertThat(publisher.attempted).containsExactly(1L, 2L);
    } finally {
      Thread.interrupted();
    }
  }

  @Test
  void aResultHasAFailureExactlyWhenFailed() {
    OutboxMessage m = row(7, null);
    assertThat(OutboxPublishResult.sent(m)).isEqualTo(new OutboxPublishResult(7, Status.SENT, null));
    assertThatThrownBy(() -> new OutboxPublishResult(7, Status.FAILED, null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> new OutboxPublishResult(7, Status.SKIPPED, new RuntimeException()))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
