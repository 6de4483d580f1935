package io.idem.jms;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.jms.JmsDeliveryAttempts.Attempt;
import org.junit.jupiter.api.Test;

class JmsDeliveryAttemptsTest {
  private final JmsDeliveryAttempts attempts = new JmsDeliveryAttempts(JmsDeliveryAttempts.CAPACITY);

  @Test
  void aFirstDeliveryIsAttemptOneAndNotFlagged() {
    assertThat(attempts.attempt("ID:1", 1, false)).isEqualTo(new Attempt(1, false));
  }

  @Test
  void aRedeliveryThisConsumerNeverSawIsFlaggedWithTheBrokersCount() {
    assertThat(attempts.attempt("ID:1", 4, true)).isEqualTo(new Attempt(4, true));
    // a provider that only sets JMSRedelivered (its count read as 2), or only the count
    assertThat(attempts.attempt("ID:2", 2, true).unaccounted()).isTrue();
    assertThat(attempts.attempt("ID:3", 3, false).unaccounted()).isTrue();
  }

  @Test
  void aRedeliveryOfAMessageSeenWithoutAnEndIsFlagged() {
    attempts.attempt("ID:1", 1, false); // handed to a handler; the process died, or the session rolled back
    assertThat(attempts.attempt("ID:1", 2, true)).isEqualTo(new Attempt(2, true));
  }

  @Test
  void theConsumersOwnRetriesAreNeverFlaggedAndCountedHereNotByTheBroker() {
    attempts.attempt("ID:1", 1, false);
    attempts.failed("ID:1");
    assertThat(attempts.attempt("ID:1", 2, true)).isEqualTo(new Attempt(2, false));
    attempts.failed("ID:1");
    // the count jumped (another message's deaths, a reconnect): this life's count goes on by one
    assertThat(attempts.attempt("ID:1", 7, true)).isEqualTo(new Attempt(3, false));
  }

  @Test
  void afterAFlaggedDeliveryThisLifeCountsItsOwnFailuresFromOne() {
    Attempt flagged = attempts.attempt("ID:1", 5, true); // inflated by a neighbour's deaths
    assertThat(JmsDeliveryAttempts.inLife(flagged.number(), flagged.unaccounted())).isEqualTo(1);
    attempts.failed("ID:1");
    assertThat(attempts.attempt("ID:1", 6, true)).isEqualTo(new Attempt(2, false));
  }

  @Test
  void aSettledMessageIsForgottenSoItsRedeliveryIsFlaggedAgain() {
    attempts.attempt("ID:1", 1, false);
    attempts.failed("ID:1");
    attempts.forget("ID:1");
    assertThat(attempts.tracked()).isZero();
    assertThat(attempts.attempt("ID:1", 2, true).unaccounted()).isTrue();
  }

  @Test
  void withoutAMessageIdNothingIsRememberedAndEveryRedeliveryIsFlagged() {
    assertThat(attempts.attempt(null, 1, false)).isEqualTo(new Attempt(1, false));
    attempts.failed(null);
    assertThat(attempts.attempt(null, 2, true)).isEqualTo(new Attempt(2, true));
    assertThat(attempts.tracked()).isZero();
  }

  @Test
  void atMostCapacityMessagesAreRememberedTheLeastRecentlyUsedGoFirst() {
    JmsDeliveryAttempts small = new JmsDeliveryAttempts(2);
    small.attempt("ID:1", 1, false);
    small.failed("ID:1");
    small.attempt("ID:2", 1, false);
    small.attempt("ID:3", 1, false);
    assertThat(small.tracked()).isEqualTo(2);
    assertThat(small.attempt("ID:1", 2, true).unaccounted()).as("forgotten: flagged").isTrue();
  }
}
