package io.idem.examples;

import io.idem.kafka.KafkaRedeliveryHorizon;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.store.jdbc.RetentionJob;
import java.time.Duration;

/**
 * The README's retention example (docs/STORE.md, "Retention"): a scheduled purge of the
 * processed-events markers older than 15 days, in bounded batches each in its own short
 * transaction, safe on several instances. {@code build()} reads the Kafka topic's horizon
 * ({@code retention.ms + segment.ms + log.retention.check.interval.ms}) and refuses a window that
 * is not longer than it: a marker purged while its message can still
 * be redelivered would let that message be applied again.
 */
public final class Retention {
  private Retention() {}

  /** Starts the purge with the consumers; close the returned job with them. */
  public static RetentionJob start(MyBatisProcessedEventStore store, String bootstrapServers) {
    // README: begin
    RetentionJob retention = RetentionJob.builder(store)
        .retention(Duration.ofDays(15))                                    // the default window
        .redeliveryHorizon(KafkaRedeliveryHorizon.of(bootstrapServers, "orders"))  // refused if not longer
        .build();
    retention.start();   // a pass every hour on a daemon thread; retention.close() with the consumers
    // README: end
    return retention;
  }
}
