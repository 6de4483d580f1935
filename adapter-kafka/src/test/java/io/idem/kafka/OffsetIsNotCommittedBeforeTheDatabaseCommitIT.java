package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ProcessingOutcome;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * While a record's handler is still inside its database transaction, the record's offset is not
 * committed; it is committed once the transaction committed.
 */
class OffsetIsNotCommittedBeforeTheDatabaseCommitIT extends KafkaITSupport {

  @Test
  void committedOffsetStaysBehindARecordWhoseTransactionIsOpen() throws Exception {
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    start((message, session) -> {
      TestEffects.record(session, keyOf(message), message.payload());
      if (keyOf(message).equals("blocking")) {
        entered.countDown();
        if (!release.await(60, TimeUnit.SECONDS)) {
          throw new IllegalStateException("never released");
        }
      }
    }, b -> b);

    publish(0, "first", "{}");
    await("first record committed").atMost(TIMEOUT).until(() -> committed(0) == 1);

    publish(0, "blocking", "{}");
    assertThat(entered.await(60, TimeUnit.SECONDS)).isTrue();
    await("offset held while the transaction is open")
        .during(Duration.ofMillis(1500)).atMost(Duration.ofSeconds(5))
        .untilAsserted(() -> {
          assertThat(committed(0)).isEqualTo(1);
          assertThat(effects.count("blocking")).isZero();
        });

    release.countDown();
    await("blocking record committed").atMost(TIMEOUT).until(() -> committed(0) == 2);
    assertThat(effects.count("blocking")).isEqualTo(1);
    assertThat(outcomes.count("blocking", ProcessingOutcome.PROCESSED)).isEqualTo(1);
  }
}
