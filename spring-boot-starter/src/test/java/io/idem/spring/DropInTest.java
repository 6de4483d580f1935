package io.idem.spring;

import org.springframework.beans.factory.annotation.Autowired;

/**
 * What the drop-in tests of one application share: the beans of {@link DropInTestSupport.Beans}
 * they read their results from. The test classes of one application extend its base class (same
 * configuration, so Spring's context cache gives them one application) and implement {@link
 * DropInListenerContract} for the listener they send to.
 */
abstract class DropInTest {
  static final String GROUP = DropInListenerContract.GROUP;

  @Autowired DropInTestSupport.Payments payments;
  @Autowired DropInTestSupport.Outcomes outcomes;
  @Autowired SpringTransactionStore store;
  @Autowired DropInTestSupport.DeadLetterInbox deadLetters;

  /** Sends {@code body} with the idempotency key {@code key} to the listener under test. */
  public abstract void send(String key, String body);

  /** {@code idem.retry.max-attempts} of the application under test. */
  public int maxAttempts() {
    return DropInTestSupport.MAX_ATTEMPTS;
  }

  public DropInTestSupport.Payments payments() {
    return payments;
  }

  public DropInTestSupport.Outcomes outcomes() {
    return outcomes;
  }

  public SpringTransactionStore store() {
    return store;
  }

  public DropInTestSupport.DeadLetterInbox deadLetters() {
    return deadLetters;
  }
}
