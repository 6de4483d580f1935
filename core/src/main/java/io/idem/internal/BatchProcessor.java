package io.idem.internal;

import io.idem.BatchOrder;
import io.idem.BatchResult;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.StoreUnavailableException;
import io.idem.TransactionRetryException;
import io.idem.internal.Keys.KeyOrReason;
import io.idem.spi.Acknowledgement;
import io.idem.spi.ClaimResult;
import io.idem.spi.ProcessedEventStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The batch pipeline ({@link IdempotentConsumer#processBatch(List, List, BatchOrder)}, docs/DESIGN.md
 * "Batch mode"): keys, one transaction with one {@link ProcessedEventStore#claimAll} and the
 * handlers of the new messages, then the settlement in order; a failed transaction is answered as
 * a whole (outage, transaction retry, shutdown) or redone message by message (anything else).
 * Thread-safe.
 */
final class BatchProcessor<C> {
  // the pipeline's logger, so that its lines keep one category whichever class writes them
  private static final Logger LOG = LoggerFactory.getLogger(IdempotentConsumer.class);

  private final ProcessedEventStore<C> store;
  private final Keys keys;
  private final ClaimAndHandle<C> work;
  private final Settlement settlement;
  private final IdempotencyListener listener;
  private final OutageTracker outages;
  private final OneByOne oneByOne;
  private final HandlerFailed handlerFailed;
  private final Tracing tracing;

  /** The per-message pipeline after the key, which the redo of a failed batch goes through. */
  @FunctionalInterface
  interface OneByOne {
    ProcessingOutcome process(InboundMessage message, IdempotencyKey key, byte[] fingerprint,
        Acknowledgement acknowledgement, long start);
  }

  /** The per-message pipeline's answer to a failed handler run: retry or dead-letter, counted. */
  @FunctionalInterface
  interface HandlerFailed {
    ProcessingOutcome settle(InboundMessage message, IdempotencyKey key, Throwable failure,
        Acknowledgement acknowledgement, long start);
  }

  BatchProcessor(ProcessedEventStore<C> store, Keys keys, ClaimAndHandle<C> work,
      Settlement settlement, IdempotencyListener listener, OutageTracker outages, OneByOne oneByOne,
      HandlerFailed handlerFailed, Tracing tracing) {
    this.tracing = tracing;
    this.store = store;
    this.keys = keys;
    this.work = work;
    this.settlement = settlement;
    this.listener = listener;
    this.outages = outages;
    this.oneByOne = oneByOne;
    this.handlerFailed = handlerFailed;
  }

  /** See {@link IdempotentConsumer#processBatch(List, List, BatchOrder)}. */
  BatchResult process(
      List<InboundMessage> messages, List<Acknowledgement> acknowledgements, BatchOrder order) {
    if (messages.size() != acknowledgements.size()) {
      throw new IllegalArgumentException("messages and acknowledgements must have the same size,"
          + " but had " + messages.size() + " and " + acknowledgements.size());
    }
    Objects.requireNonNull(order, "order");
    Tracing.Span span = messages.isEmpty() ? null
        : tracing.startBatch(messages.get(0).source(), messages.size());
    if (span == null) {
      return processUnobserved(messages, acknowledgements, order);
    }
    Throwable failure = null;
    try {
      return processUnobserved(messages, acknowledgements, order);
    } catch (RuntimeException | Error e) {
      failure = e;
      throw e;
    } finally {
      span.stop(null, failure);
    }
  }

  private BatchResult processUnobserved(
      List<InboundMessage> messages, List<Acknowledgement> acknowledgements, BatchOrder order) {
    long start = System.nanoTime();
    List<Item> items = new ArrayList<>(messages.size());
    List<Item> keyed = new ArrayList<>(messages.size());
    for (int i = 0; i < messages.size(); i++) {
      InboundMessage delivery = Objects.requireNonNull(messages.get(i), "message");
      Acknowledgement acknowledgement = Objects.requireNonNull(acknowledgements.get(i), "acknowledgement");
      KeyOrReason key = keys.key(delivery);
      InboundMessage message = key.message(); // unwrapped from its envelopes, as in process
      IdempotencyKey found = key.key();
      Item item = new Item(message, acknowledgement, key,
          found == null ? null : Fingerprints.sha256(message.payload()));
      items.add(item);
      if (found != null) {
        keys.announce(message, found);
        keyed.add(item);
      }
    }
    if (keyed.isEmpty()) {
      return BatchLoop.run(items, order, item -> keyless(item, start));
    }
    if (keyed.stream().anyMatch(item -> item.message.unaccountedRedelivery())) {
      // a delivery that may have run before without being counted (docs/FAILURES.md, "Attempts
      // that survive the process"): one by one, so that its attempt is counted before its handler
      // runs and a message that kills the process dies alone, not with a whole batch each time
      return BatchLoop.run(items, order, item -> item.key.key() == null
          ? keyless(item, start)
          : oneByOne.process(item.message, item.key(), item.fingerprint(), item.acknowledgement, start));
    }
    for (Item item : keyed) {
      listener.beforeClaim(item.message, item.key());
    }
    List<ClaimResult> claims;
    ClaimAndHandle.Running running = new ClaimAndHandle.Running();
    try {
      claims = store.inTransaction(tx -> claimAllAndHandle(tx, keyed, running));
    } catch (Exception e) {
      return failed(items, keyed.size(), e, running.message, order, start);
    } catch (VirtualMachineError e) {
      if (!(e instanceof StackOverflowError)) {
        throw e;
      }
      return failed(items, keyed.size(), e, running.message, order, start);
    } catch (Error e) {
      return failed(items, keyed.size(), e, running.message, order, start);
    }
    outages.reached();
    for (int i = 0; i < keyed.size(); i++) {
      keyed.get(i).claim = claims.get(i);
    }
    return BatchLoop.run(items, order, item -> item.key.key() == null
        ? keyless(item, start)
        : settlement.settle(item.message, item.key(), item.claim(), item.acknowledgement, start));
  }

  /**
   * The batch's transaction rolled back. An outage, a transaction retry or a shutdown is nobody's
   * fault and would meet every message again: each keyed message gets that retry outcome at once
   * (one outage counted for the one transaction). Anything else is redone message by message;
   * when it was a per-message handler's run that failed ({@code failing}: its handler threw, or
   * its claim was found lost right after it — pgjdbc's transaction state), that run was the
   * failing message's attempt, so it is settled as a handler failure at once instead of running
   * its handler a second time for the same attempt (an attempt is one handler run,
   * docs/DESIGN.md). A claim found lost at the COMMIT (store-jdbc on MariaDB counts the batch's
   * markers with it) blames no message: every message is redone, its handler included.
   */
  private BatchResult failed(List<Item> items, int keyedCount, Throwable failure,
      @Nullable InboundMessage failing, BatchOrder order, long start) {
    String source = items.get(0).message.source();
    Function<Item, ProcessingOutcome> answer;
    if (Interruption.isShutdown(failure)) {
      answer = item -> settlement.released(item.message, item.key(), failure, item.acknowledgement, start);
    } else if (failure instanceof StoreUnavailableException e) {
      Duration delay = settlement.outageDelay(
          "a batch of " + keyedCount + " keyed message(s) of " + source + " not processed", e);
      answer = item -> settlement.storeUnavailable(
          item.message, item.key(), e, item.acknowledgement, start, delay);
    } else if (failure instanceof TransactionRetryException e) {
      outages.reached();
      Duration delay = settlement.transactionRetryDelay();
      answer = item -> settlement.transactionRetry(
          item.message, item.key(), e, item.acknowledgement, start, delay);
    } else {
      outages.reached();
      LOG.info("a batch of {} keyed message(s) of {} rolled back ({}); redoing it message by message",
          keyedCount, source, FailureText.oneLine(failure));
      answer = item -> item.message == failing
          ? handlerFailed.settle(item.message, item.key(), failure, item.acknowledgement, start)
          : oneByOne.process(item.message, item.key(), item.fingerprint(), item.acknowledgement, start);
    }
    return BatchLoop.run(items, order, item -> item.key.key() == null ? keyless(item, start) : answer.apply(item));
  }

  private ProcessingOutcome keyless(Item item, long start) {
    return settlement.deadLetterKeyless(item.message, item.key, item.acknowledgement, start);
  }

  private List<ClaimResult> claimAllAndHandle(C tx, List<Item> keyed, ClaimAndHandle.Running running)
      throws Exception {
    List<IdempotencyKey> keys = new ArrayList<>(keyed.size());
    List<byte[]> fingerprints = new ArrayList<>(keyed.size());
    List<InboundMessage> messages = new ArrayList<>(keyed.size());
    for (Item item : keyed) {
      keys.add(item.key());
      fingerprints.add(item.fingerprint());
      messages.add(item.message);
    }
    return work.all(tx, keys, fingerprints, messages, running);
  }

  /** One message of a batch on its way through {@link #process}. Confined to the calling thread. */
  private static final class Item {
    final InboundMessage message;
    final Acknowledgement acknowledgement;
    final KeyOrReason key;
    final byte @Nullable [] fingerprint;
    @Nullable ClaimResult claim;

    Item(InboundMessage message, Acknowledgement acknowledgement, KeyOrReason key, byte @Nullable [] fingerprint) {
      this.message = message;
      this.acknowledgement = acknowledgement;
      this.key = key;
      this.fingerprint = fingerprint;
    }

    IdempotencyKey key() {
      return Objects.requireNonNull(key.key());
    }

    byte[] fingerprint() {
      return Objects.requireNonNull(fingerprint);
    }

    ClaimResult claim() {
      return Objects.requireNonNull(claim);
    }
  }
}
