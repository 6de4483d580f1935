package io.idem.testkit;

import io.idem.StoreUnavailableException;
import io.idem.spi.ForwardingProcessedEventStore;
import io.idem.spi.ProcessedEventStore;
import io.idem.spi.TransactionWork;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A store that passes everything to another one, except for the failures a test switches on: a
 * database outage for the next {@code n} transactions ({@link StoreUnavailableException} before
 * the work runs, as when no connection can be opened), or a commit that fails after the work ran
 * (the transaction rolls back). For tests of what an adapter does around the store, on the real
 * database. Everything else is forwarded ({@link ForwardingProcessedEventStore}); runs go through
 * {@link #inTransaction}, so the switches hold inside them too. Thread-safe.
 *
 * @param <C> the store's transaction context
 */
public final class SwitchableStore<C> extends ForwardingProcessedEventStore<C> {
  /** Thrown out of a transaction whose commit {@link #failNextCommits failed}. */
  public static final class FailedCommitException extends RuntimeException {
    FailedCommitException() {
      super("simulated COMMIT failure: the transaction rolled back");
    }
  }

  private final AtomicInteger outages = new AtomicInteger();
  private final AtomicInteger failedCommits = new AtomicInteger();
  private final AtomicInteger refused = new AtomicInteger();

  public SwitchableStore(ProcessedEventStore<C> delegate) {
    super(delegate);
  }

  /** The next {@code transactions} calls of {@link #inTransaction} throw {@link StoreUnavailableException}. */
  public void failNextTransactions(int transactions) {
    outages.set(transactions);
  }

  /** The next {@code transactions} transactions run their work, then roll back and throw {@link FailedCommitException}. */
  public void failNextCommits(int transactions) {
    failedCommits.set(transactions);
  }

  /** How many transactions were refused as an outage so far. */
  public int refusedTransactions() {
    return refused.get();
  }

  private static boolean takeOne(AtomicInteger counter) {
    return counter.getAndUpdate(n -> Math.max(0, n - 1)) > 0;
  }

  @Override
  public <T> T inTransaction(TransactionWork<C, T> work) throws Exception {
    if (takeOne(outages)) {
      refused.incrementAndGet();
      throw new StoreUnavailableException("simulated outage: the database cannot be reached", null);
    }
    return super.inTransaction(tx -> {
      T result = work.run(tx);
      if (takeOne(failedCommits)) {
        throw new FailedCommitException();
      }
      return result;
    });
  }
}
