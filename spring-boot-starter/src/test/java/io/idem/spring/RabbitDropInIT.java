package io.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.idem.DeadLetterReason;
import io.idem.ProcessingOutcome;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.amqp.core.AmqpAdmin;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.core.Queue;
import org.springframework.beans.factory.annotation.Autowired;

/**
 * {@code @Idempotent} on a {@code @RabbitListener} taking Spring AMQP's {@code Message} ({@link
 * RabbitDropInApp}): the drop-in contract under {@code default-requeue-rejected=false}, and issue
 * 24's case 5, a delivery that cannot be settled.
 */
class RabbitDropInIT extends RabbitDropInApp implements DropInListenerContract {
  @Autowired AmqpAdmin admin;

  @Override
  public void send(String key, String body) {
    send(MESSAGES, key, body, true);
  }

  /**
   * Issue 24, case 5. RabbitMQ confirms a publish to a queue that does not exist (the default
   * exchange drops it), so Idem checks the dead-letter queue first; while it is missing the
   * original stays unacknowledged and comes back — not hot (it was redelivered 404 times in 11 s,
   * a stack trace each): each comes back after the retry policy's backoff (200 ms, then 400 ms
   * here), without running the handler again, logged once per interval; and once the queue exists
   * the copy carries the true attempt, the one of the last handler run (it said {@code
   * idem-attempt=409} with "attempt 5 of 5" in its detail).
   */
  @Test
  void aDeadLetterToAMissingQueueBacksOffLogsOnceAndKeepsTheTrueAttempt() {
    String key = "k-" + UUID.randomUUID();
    String deadLetterQueue = WITHOUT_DLQ + RabbitDeliveries.DEAD_LETTER_SUFFIX;
    ListAppender<ILoggingEvent> log = new ListAppender<>();
    Logger interceptor = (Logger) LoggerFactory.getLogger(IdempotentListenerInterceptor.class);
    log.start();
    interceptor.addAppender(log);
    try {
      MessageProperties properties = new MessageProperties();
      properties.setMessageId(UUID.randomUUID().toString());
      properties.setHeader("idempotency-key", key);
      template.send("", WITHOUT_DLQ, new Message("poison 40".getBytes(StandardCharsets.UTF_8), properties));

      await().atMost(DropInTestSupport.WAIT).until(() -> outcomes.failedAcknowledgements(key).size() >= 3);
      assertThat(outcomes.failedAcknowledgements(key).get(0)).hasMessageContaining(deadLetterQueue)
          .hasMessageContaining("does not exist");
      List<Long> times = outcomes.failedAcknowledgementTimes(key);
      // backoff(1) = 200 ms and backoff(2) = 400 ms, each ±20 % jitter
      assertThat(Duration.ofNanos(times.get(1) - times.get(0))).isGreaterThanOrEqualTo(Duration.ofMillis(160));
      assertThat(Duration.ofNanos(times.get(2) - times.get(1))).isGreaterThanOrEqualTo(Duration.ofMillis(320));
      assertThat(payments.runs(key)).as("the handler ran only for its attempts").isEqualTo(DropInTestSupport.MAX_ATTEMPTS);
      assertThat(outcomes.of(key)).doesNotContain(ProcessingOutcome.DEAD_LETTERED);
      assertThat(log.list).filteredOn(e -> e.getFormattedMessage().contains("could not settle"))
          .as("logged once in its first %s s", UnsettledDeliveries.FIRST_LOG_INTERVAL_SECONDS).hasSize(1);

      admin.declareQueue(new Queue(deadLetterQueue, false, false, false));
      await().atMost(DropInTestSupport.WAIT).until(() -> outcomes.of(key).contains(ProcessingOutcome.DEAD_LETTERED));
      Message copy = template.receive(deadLetterQueue, DropInTestSupport.WAIT.toMillis());
      assertThat(copy).as("the dead-letter copy, once its queue exists").isNotNull();
      assertThat(copy.getMessageProperties().<String>getHeader("idempotency-key")).isEqualTo(key);
      assertThat(copy.getMessageProperties().<String>getHeader(DeadLetterReason.HEADER_ATTEMPT))
          .isEqualTo(String.valueOf(DropInTestSupport.MAX_ATTEMPTS));
      assertThat(copy.getMessageProperties().<String>getHeader(DeadLetterReason.HEADER_DETAIL))
          .contains("attempt 3 of 3");
      assertThat(payments.runs(key)).isEqualTo(DropInTestSupport.MAX_ATTEMPTS);
    } finally {
      interceptor.detachAppender(log);
      admin.deleteQueue(deadLetterQueue);
    }
  }
}
