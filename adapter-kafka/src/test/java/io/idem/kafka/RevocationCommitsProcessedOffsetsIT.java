package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ProcessingOutcome;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * When a second consumer joins the group, the first commits the settled offsets of its revoked
 * partitions in {@code onPartitionsRevoked}, so the new owner starts right after them: nothing is
 * processed twice, not even as a skipped duplicate. The commit interval is set to an hour, so the
 * revocation is the only thing that can have committed those offsets.
 */
class RevocationCommitsProcessedOffsetsIT extends KafkaITSupport {
  private static final int RECORDS = 200;

  @Override
  protected int partitions() {
    return 4;
  }

  @Test
  void aJoiningConsumerResumesAfterTheRevokedPartitionsProcessedRecords() {
    for (int i = 0; i < RECORDS; i++) {
      publish(i % 4, "r-" + i, "{\"n\":" + i + "}");
    }
    io.idem.MessageHandler<org.apache.ibatis.session.SqlSession> slow = (message, session) -> {
      TestEffects.record(session, keyOf(message), message.payload());
      Thread.sleep(10);
    };
    // heartbeats every 100 ms: the first consumer learns of the join quickly (default 3 s)
    UnaryOperator<KafkaConsumerConfig.Builder> settings = b -> b.commitInterval(Duration.ofHours(1))
        .maxPollRecords(10).consumerProperty("heartbeat.interval.ms", 100);
    start(slow, settings);
    await().atMost(TIMEOUT).until(() -> effects.total() >= 40);
    assertThat(lag()).isEqualTo(RECORDS); // nothing committed yet: the interval has not passed

    AtomicInteger handledBySecond = new AtomicInteger();
    start((message, session) -> {
      handledBySecond.incrementAndGet();
      slow.handle(message, session);
    }, settings);
    await("all effects").atMost(TIMEOUT).until(() -> effects.distinctKeys() == RECORDS);

    assertThat(lag()).isLessThan(RECORDS); // the revocation committed what was settled
    assertThat(handledBySecond.get()).isPositive(); // partitions did move to the second consumer
    assertThat(effects.total()).isEqualTo(RECORDS);
    assertThat(outcomes.count(ProcessingOutcome.PROCESSED)).isEqualTo(RECORDS);
    assertThat(outcomes.count(ProcessingOutcome.DUPLICATE)).isZero();
  }
}
