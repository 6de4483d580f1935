package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.InboundMessage;
import io.idem.MessageHandler;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;

/**
 * {@link TestDatabase#recordingHandler()} that holds the first run of one key until {@link
 * #release} — a handler in flight, for close and connection-loss tests — and, with a {@link
 * RabbitBatchIT.Gate}, lets the gate message pass it first. Thread-safe.
 */
final class HoldingHandler implements MessageHandler<SqlSession> {
  /** Counted down when the held key's first run starts. */
  final CountDownLatch entered = new CountDownLatch(1);
  /** Count down to let the held run go on (it fails after 60 s without). */
  final CountDownLatch release = new CountDownLatch(1);
  private final String key;
  private final RabbitBatchIT.@Nullable Gate gate;
  private final AtomicInteger runs = new AtomicInteger();

  HoldingHandler(String key, RabbitBatchIT.@Nullable Gate gate) {
    this.key = key;
    this.gate = gate;
  }

  @Override
  public void handle(InboundMessage message, SqlSession session) throws Exception {
    if (gate != null) {
      gate.pass(message);
    }
    if (key.equals(message.header("idempotency-key")) && runs.incrementAndGet() == 1) {
      entered.countDown();
      assertThat(release.await(60, TimeUnit.SECONDS)).isTrue();
    }
    TestDatabase.record(session, String.valueOf(message.header("idempotency-key")), message.deliveryAttempt());
  }
}
