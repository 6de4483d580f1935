package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.NonRetryableException;
import io.idem.RetryPolicy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/**
 * The relay's reading of a publisher's failure, on the JDK's own types (the broker clients' are
 * exercised against real brokers: KafkaOutboxRelayFailuresIT, RabbitOutboxRelayOutageIT).
 */
class OutboxFailuresTest {

  /** A type of one's own, standing in for a broker client's "record too large". */
  static final class TooLarge extends RuntimeException {
    TooLarge() {
      super("record too large");
    }
  }

  @Test
  void connectionAndTimeoutFailuresAreTheDestinationsAnywhereInTheChain() {
    assertThat(OutboxFailures.classify(new ConnectException("refused")))
        .isEqualTo(OutboxFailureKind.DESTINATION_UNAVAILABLE);
    assertThat(OutboxFailures.classify(new TimeoutException("no confirm")))
        .isEqualTo(OutboxFailureKind.DESTINATION_UNAVAILABLE);
    assertThat(OutboxFailures.classify(new ExecutionException(new UncheckedIOException(
        new SocketTimeoutException("read timed out"))))).isEqualTo(OutboxFailureKind.DESTINATION_UNAVAILABLE);
    assertThat(OutboxFailures.classify(new IOException("returned as unroutable")))
        .as("a refusal of this row").isEqualTo(OutboxFailureKind.ROW);
    assertThat(OutboxFailures.classify(new StackOverflowError())).isEqualTo(OutboxFailureKind.ROW);
  }

  @Test
  void aNonRetryableTypeIsFoundBehindItsWrappers() {
    RetryPolicy policy = RetryPolicy.builder().nonRetryable(TooLarge.class).build();
    assertThat(OutboxFailures.isRetryable(new ExecutionException(new TooLarge()), policy)).isFalse();
    assertThat(OutboxFailures.isRetryable(new CompletionException(new RuntimeException(new TooLarge())), policy)).isFalse();
    assertThat(OutboxFailures.isRetryable(new ExecutionException(new NonRetryableException("no")), RetryPolicy.ofDefaults())).isFalse();
    assertThat(OutboxFailures.isRetryable(new ExecutionException(new IllegalStateException("flaky")), policy)).isTrue();
    assertThat(OutboxFailures.classify(new ExecutionException(new NonRetryableException("refused", new ConnectException()))))
        .as("a publisher's own verdict wins").isEqualTo(OutboxFailureKind.ROW);
  }

  @Test
  void aCauseCycleEnds() {
    RuntimeException a = new RuntimeException("a");
    RuntimeException b = new RuntimeException("b", a);
    a.initCause(b);
    assertThat(OutboxFailures.causes(a)).hasSize(2);
    assertThat(OutboxFailures.classify(a)).isEqualTo(OutboxFailureKind.ROW);
    assertThat(OutboxRelay.errorText(a)).isEqualTo("java.lang.RuntimeException: a <- java.lang.RuntimeException: b");
  }
}
