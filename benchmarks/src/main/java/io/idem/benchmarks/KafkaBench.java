package io.idem.benchmarks;

import io.idem.fixtures.KafkaFixture;
import org.jspecify.annotations.Nullable;

/** Kafka: a topic of {@code partitions} partitions (and its {@code .DLT}) per run; the consumers of {@link Consumers}. */
final class KafkaBench implements BenchBroker {
  private final String bootstrap;
  private final String origin;
  private int partitions = 2;

  private KafkaBench(String bootstrap, String origin) {
    this.bootstrap = bootstrap;
    this.origin = origin;
  }

  /** Kafka at {@code bootstrap}, else the fixtures' ({@code IDEM_KAFKA_BOOTSTRAP}, else an in-JVM KRaft broker). */
  static KafkaBench connect(@Nullable String bootstrap) {
    if (bootstrap != null) {
      return new KafkaBench(bootstrap, "--bootstrap " + bootstrap);
    }
    KafkaFixture kafka = KafkaFixture.shared();
    return new KafkaBench(kafka.bootstrapServers(), kafka.origin());
  }

  KafkaBench partitions(int value) {
    this.partitions = value;
    return this;
  }

  @Override
  public String name() {
    return "kafka";
  }

  @Override
  public String describe() {
    return "Kafka " + origin + ", " + partitions + " partitions per topic";
  }

  @Override
  public String address() {
    return bootstrap;
  }

  @Override
  public int defaultBatchSize() {
    return 100;
  }

  @Override
  public void create(String id) throws Exception {
    Topics.create(bootstrap, id, partitions);
  }

  @Override
  public void publish(String id, OrderStream stream) {
    stream.publish(bootstrap, id);
  }

  @Override
  public AutoCloseable start(Variant variant, Run run, BenchDatabase db, Progress progress) {
    return Consumers.start(variant, new Consumers.Setup(bootstrap, run.destination(), run.destination(),
        run.maxBatchSize(), run.concurrency(), false, run.commitIntervalMillis(), run.maxPollRecords()), db, progress);
  }

  @Override
  public void delete(String id) {
    Topics.delete(bootstrap, id);
  }

  @Override
  public void close() {
    Topics.closeAll();
  }
}
