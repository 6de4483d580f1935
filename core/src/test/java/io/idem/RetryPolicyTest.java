package io.idem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class RetryPolicyTest {

  @Test
  void defaultsAreDocumentedValues() {
    RetryPolicy p = RetryPolicy.ofDefaults();
    assertThat(p.maxAttempts()).isEqualTo(RetryPolicy.DEFAULT_MAX_ATTEMPTS);
    assertThat(p.initialBackoff()).isEqualTo(Duration.ofSeconds(1));
    assertThat(p.maxBackoff()).isEqualTo(Duration.ofMinutes(1));
  }

  @Test
  void backoffGrowsExponentiallyAndIsCapped() {
    RetryPolicy p = RetryPolicy.builder().initialBackoff(Duration.ofMillis(100))
        .maxBackoff(Duration.ofSeconds(1)).multiplier(2).jitter(0).build();
    assertThat(p.backoff(1)).isEqualTo(Duration.ofMillis(100));
    assertThat(p.backoff(2)).isEqualTo(Duration.ofMillis(200));
    assertThat(p.backoff(4)).isEqualTo(Duration.ofMillis(800));
    assertThat(p.backoff(5)).isEqualTo(Duration.ofSeconds(1));
    assertThat(p.backoff(10_000)).isEqualTo(Duration.ofSeconds(1));
    assertThat(p.backoff(0)).isEqualTo(Duration.ofMillis(100));
  }

  @Test
  void jitterStaysWithinItsShare() {
    RetryPolicy p = RetryPolicy.builder().initialBackoff(Duration.ofMillis(1000))
        .maxBackoff(Duration.ofSeconds(10)).jitter(0.2).build();
    for (int i = 0; i < 1000; i++) {
      assertThat(p.backoff(1)).isBetween(Duration.ofMillis(800), Duration.ofMillis(1200));
    }
  }

  @Test
  void attemptsLeft() {
    RetryPolicy p = RetryPolicy.builder().maxAttempts(3).build();
    assertThat(p.hasAttemptsLeft(1)).isTrue();
    assertThat(p.hasAttemptsLeft(2)).isTrue();
    assertThat(p.hasAttemptsLeft(3)).isFalse();
  }

  @Test
  void nonRetryableTypes() {
    RetryPolicy p = RetryPolicy.builder().nonRetryable(IllegalArgumentException.class).build();
    assertThat(p.isRetryable(new IllegalStateException())).isTrue();
    assertThat(p.isRetryable(new NumberFormatException())).isFalse();
    assertThat(p.isRetryable(new NonRetryableException("bad payload"))).isFalse();
  }

  @Test
  void validationNamesSettingAndValue() {
    assertThatThrownBy(() -> RetryPolicy.builder().maxAttempts(0).build())
        .hasMessage("maxAttempts must be >= 1, but was 0");
    assertThatThrownBy(() -> RetryPolicy.builder().jitter(1.5).build())
        .hasMessage("jitter must be in [0, 1), but was 1.5");
    assertThatThrownBy(() -> RetryPolicy.builder().multiplier(0.5).build())
        .hasMessage("multiplier must be >= 1.0, but was 0.5");
    assertThatThrownBy(() -> RetryPolicy.builder().maxBackoff(Duration.ofDays(365_000)).build())
        .hasMessageContaining("maxBackoff must be at most PT24H");
    assertThatThrownBy(() -> RetryPolicy.builder().initialBackoff(Duration.ofSeconds(2)).maxBackoff(Duration.ofSeconds(1)).build())
        .hasMessageContaining("maxBackoff must be >= initialBackoff");
  }

  @Test
  void toBuilderKeepsEverySettingAndDerivesAnother() {
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(7).initialBackoff(Duration.ofMillis(200))
        .maxBackoff(Duration.ofSeconds(3)).multiplier(1.5).jitter(0.1).maxTransactionRetries(4)
        .retryIntegrityViolations(true).nonRetryable(IllegalArgumentException.class).build();
    RetryPolicy copy = policy.toBuilder().build();
    assertThat(copy.toString()).isEqualTo(policy.toString());
    assertThat(copy.isRetryable(new IllegalArgumentException("bad"))).isFalse();

    RetryPolicy derived = policy.toBuilder().maxTransactionRetries(Integer.MAX_VALUE).build();
    assertThat(derived.maxTransactionRetries()).isEqualTo(Integer.MAX_VALUE);
    assertThat(derived.maxAttempts()).isEqualTo(7);
    assertThat(policy.maxTransactionRetries()).isEqualTo(4);
  }
}
