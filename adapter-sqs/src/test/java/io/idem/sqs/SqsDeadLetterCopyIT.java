package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.idem.DeadLetterCause;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.InboundMessage;
import io.idem.NonRetryableException;
import io.idem.ProcessingOutcome;
import io.idem.testkit.DeadLetteredMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.GetQueueAttributesRequest;
import software.amazon.awssdk.services.sqs.model.GetQueueAttributesResponse;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/**
 * Issue 11, item 5: dead-letter copies SQS accepts — sized to the dead-letter queue's
 * MaximumMessageSize, reason text within SQS's character set — and a copy that cannot be sent is
 * reported at ERROR once, not on every retry.
 */
class SqsDeadLetterCopyIT extends SqsTestBase {
  private static final int ONE_MIB = 1_048_576;
  private final ListAppender<ILoggingEvent> logged = new ListAppender<>();
  private final Logger log = (Logger) LoggerFactory.getLogger(SqsIdempotentConsumer.class);

  @BeforeEach
  void captureLog() {
    logged.start();
    log.addAppender(logged);
  }

  @AfterEach
  void releaseLog() {
    log.detachAppender(logged);
  }

  @Test
  void aDeadLetterQueueAllowingOneMebibyteTakesACopyLargerThan256KiB() {
    SqsHarness queue = queue(false, Map.of(QueueAttributeName.MAXIMUM_MESSAGE_SIZE, Integer.toString(ONE_MIB)));
    queue.client().setQueueAttributes(b -> b.queueUrl(queue.dlqUrl())
        .attributes(Map.of(QueueAttributeName.MAXIMUM_MESSAGE_SIZE, Integer.toString(ONE_MIB))));
    // Emulator corner: ElasticMQ 1.7.1 neither keeps nor enforces MaximumMessageSize (it reports
    // 256 KiB whatever was set); AWS reports what was set. The client reports the dead-letter
    // queue's size as AWS would; everything else goes to ElasticMQ unchanged.
    SqsClient sqs = interceptedClient((method, args, real) -> {
      Object answer = real.call();
      if (method.equals("getQueueAttributes") && answer instanceof GetQueueAttributesResponse response
          && queue.dlqUrl().equals(requestedUrl(args[0]))) {
        Map<QueueAttributeName, String> attributes = new HashMap<>(response.attributes());
        attributes.put(QueueAttributeName.MAXIMUM_MESSAGE_SIZE, Integer.toString(ONE_MIB));
        return response.toBuilder().attributes(attributes).build();
      }
      return answer;
    });
    char[] big = new char[300_000]; // more than the 256 KiB the adapter used to assume
    Arrays.fill(big, 'x');
    String payload = "{\"big\":\"" + new String(big) + "\"}";
    publish(queue, "big-1", payload);
    start(queue.config().build(), pipeline((message, session) -> {
      throw new NonRetryableException("cannot apply a big one");
    }, retries(3)), sqs);

    await().atMost(TIMEOUT).until(() -> !queue.deadLetters().isEmpty());
    DeadLetteredMessage letter = queue.deadLetters().get(0);
    assertThat(letter.cause()).isEqualTo(DeadLetterCause.NON_RETRYABLE.name());
    assertThat(letter.detail()).contains("cannot apply a big one");
    assertThat(new String(letter.payload(), StandardCharsets.UTF_8)).isEqualTo(payload);
    await().atMost(TIMEOUT).until(() -> queue.pendingCount() == 0);
  }

  @SuppressWarnings("unchecked")
  private static String requestedUrl(Object request) {
    if (request instanceof GetQueueAttributesRequest built) {
      return built.queueUrl();
    }
    GetQueueAttributesRequest.Builder builder = GetQueueAttributesRequest.builder();
    ((Consumer<GetQueueAttributesRequest.Builder>) request).accept(builder);
    return builder.build().queueUrl();
  }

  @Test
  void aReasonWithCharactersSqsRefusesIsSentWithThemReplaced() {
    SqsHarness queue = queue(false);
    publish(queue, "odd-1", "{}");
    start(queue.config().build(), pipeline((message, session) -> {
      throw new NonRetryableException("bad\u0000byte, lone \uD800 half, \uFFFF end");
    }, retries(3)));

    await().atMost(TIMEOUT).until(() -> !queue.deadLetters().isEmpty());
    DeadLetteredMessage letter = queue.deadLetters().get(0);
    assertThat(letter.cause()).isEqualTo(DeadLetterCause.NON_RETRYABLE.name());
    assertThat(letter.detail()).contains("bad\uFFFDbyte, lone \uFFFD half, \uFFFD end");
    await().atMost(TIMEOUT).until(() -> queue.pendingCount() == 0);
  }

  @Test
  void aCopyThatCannotBeSentIsReportedAtErrorOnceAndTriedAgainAfterTheBackoff() {
    SqsHarness queue = queue(false);
    publish(queue, "stuck-1", "{}");
    AtomicInteger refused = new AtomicInteger();
    IdempotencyListener countRefusals = new IdempotencyListener() {
      @Override
      public void onAcknowledgementFailure(InboundMessage message, @Nullable IdempotencyKey key,
          ProcessingOutcome intended, RuntimeException failure, Duration elapsed) {
        refused.incrementAndGet();
      }
    };
    SqsConsumerConfig config = queue.config().build();
    SqsIdempotentConsumer consumer = start(config, pipeline((message, session) -> {
      throw new NonRetryableException("cannot apply");
    }, retries(3), countRefusals));
    fixture.deleteQueue(queue.client(), queue.dlqUrl()); // every copy is refused from now on

    // each round: the retry backoff (1 s of visibility) and a long poll; four for a loaded machine
    Duration rounds = Duration.ofSeconds(1).plus(config.waitTime()).multipliedBy(3 * 4);
    await().atMost(rounds).until(() -> refused.get() >= 3);
    consumer.close();

    assertThat(logged.list).filteredOn(e -> e.getLevel() == Level.ERROR)
        .filteredOn(e -> e.getFormattedMessage().contains("could not settle"))
        .hasSize(1)
        .allSatisfy(e -> assertThat(e.getThrowableProxy().getMessage()).contains("dead-letter queue"));
    assertThat(logged.list).filteredOn(e -> e.getLevel() == Level.WARN)
        .filteredOn(e -> e.getFormattedMessage().contains("could not settle"))
        .hasSizeGreaterThanOrEqualTo(2);
    assertThat(queue.pendingCount()).isEqualTo(1); // never lost: it stays in the queue
  }
}
