package io.idem.testkit;

import io.idem.BrokerConsumer;
import io.idem.DeadLetterReason;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.spi.Acknowledgement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A queue broker in memory and its adapter, right or wrong by one {@link Fault}: what the adapter
 * kit's self-test ({@link AdapterKitRejectsWrongAdaptersTest}) runs the kit against.
 */
final class FakeBroker implements BrokerHarness {

  /** What the adapter gets wrong. */
  enum Fault {
    /** Nothing: the kit must pass (the self-test's own control). */
    NONE,
    /** Acknowledges a delivery when it is received, before the pipeline ran (let alone committed). */
    ACKS_BEFORE_COMMIT,
    /** Counts a return for a store outage ({@code retryWhenStoreAvailable}) as an attempt. */
    COUNTS_STORE_OUTAGE_AS_ATTEMPT,
    /** Redelivers a retry at once, whatever the backoff. */
    IGNORES_RETRY_DELAY,
    /** close() returns at once and drops what is in flight. */
    CLOSE_ABANDONS_IN_FLIGHT
  }

  private record Delivery(long id, Map<String, String> headers, byte[] payload, int attempt) {}

  private final String name;
  private final Fault fault;
  private final LinkedBlockingQueue<Delivery> ready = new LinkedBlockingQueue<>();
  private final AtomicInteger unsettled = new AtomicInteger(); // ready + in flight + waiting for a backoff
  private final AtomicInteger ids = new AtomicInteger();
  private final List<DeadLetteredMessage> deadLetters = new CopyOnWriteArrayList<>();
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();

  FakeBroker(String name, Fault fault) {
    this.name = name;
    this.fault = fault;
  }

  @Override
  public String destination() {
    return name;
  }

  @Override
  public void publish(Map<String, String> headers, byte[] payload) {
    unsettled.incrementAndGet();
    ready.add(new Delivery(ids.incrementAndGet(), new LinkedHashMap<>(headers), payload.clone(), 1));
  }

  private void requeue(Delivery d, Duration delay, int attempt) {
    Delivery again = new Delivery(d.id(), d.headers(), d.payload(), attempt);
    timer.schedule(() -> ready.add(again), delay.toNanos(), TimeUnit.NANOSECONDS);
  }

  @Override
  public <C> BrokerConsumer newConsumer(IdempotentConsumer<C> pipeline) {
    return new Consumer<>(pipeline);
  }

  private final class Consumer<C> implements BrokerConsumer {
    private final IdempotentConsumer<C> pipeline;
    private volatile boolean running;
    private volatile boolean closed;
    private Thread worker;

    Consumer(IdempotentConsumer<C> pipeline) {
      this.pipeline = pipeline;
    }

    @Override
    public synchronized void start() {
      if (running || closed) {
        throw new IllegalStateException("already started or closed");
      }
      running = true;
      worker = new Thread(this::work, "fake-broker-" + name);
      worker.setDaemon(true);
      worker.start();
    }

    private void work() {
      while (running) {
        Delivery d;
        try {
          d = ready.poll(20, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
          return;
        }
        if (d == null) {
          continue;
        }
        boolean[] settled = {false};
        if (fault == Fault.ACKS_BEFORE_COMMIT) {
          unsettled.decrementAndGet();
          settled[0] = true;
        }
        InboundMessage message = InboundMessage.builder(name, d.payload()).headers(d.headers())
            .deliveryAttempt(d.attempt()).brokerMessageId(String.valueOf(d.id())).build();
        pipeline.process(message, new Acknowledgement() {
          private void settle() {
            if (!settled[0]) {
              settled[0] = true;
              unsettled.decrementAndGet();
            }
          }

          @Override
          public void ack() {
            settle();
          }

          @Override
          public void retry(Duration delay) {
            if (!settled[0]) {
              requeue(d, fault == Fault.IGNORES_RETRY_DELAY ? Duration.ZERO : delay, d.attempt() + 1);
            }
          }

          @Override
          public void retryWhenStoreAvailable(Duration delay) {
            if (!settled[0]) {
              requeue(d, delay, fault == Fault.COUNTS_STORE_OUTAGE_AS_ATTEMPT ? d.attempt() + 1 : d.attempt());
            }
          }

          @Override
          public void deadLetter(DeadLetterReason reason) {
            Map<String, String> headers = new LinkedHashMap<>(d.headers());
            headers.putAll(reason.toHeaders());
            deadLetters.add(new DeadLetteredMessage(headers, d.payload())); // the copy first
            settle(); // then the original
          }
        });
      }
    }

    @Override
    public void close() {
      Thread w;
      synchronized (this) {
        closed = true;
        running = false;
        w = worker;
      }
      if (w != null && fault != Fault.CLOSE_ABANDONS_IN_FLIGHT) {
        try {
          w.join(TimeUnit.SECONDS.toMillis(30));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }

    @Override
    public boolean isRunning() {
      return running;
    }

    @Override
    public io.idem.ConsumerHealth health() {
      return new io.idem.ConsumerHealth(running, running, running ? List.of(name) : List.of(), null, 0,
          new io.idem.StoreHealth(0, null, null));
    }
  }

  @Override
  public List<DeadLetteredMessage> deadLetters() {
    return new ArrayList<>(deadLetters);
  }

  @Override
  public long pendingCount() {
    return unsettled.get();
  }

  @Override
  public void close() {
    timer.shutdownNow();
  }
}
