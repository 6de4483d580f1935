package io.idem.benchmarks;

/**
 * One broker as the side-by-side command drives it: a fresh destination per run, the run's
 * {@link OrderStream} published to it, a {@link Variant}'s consumer started on it, and the
 * destination deleted afterwards. Implementations: {@link KafkaBench}, {@link RabbitBench},
 * {@link SqsBench}, {@link JmsBench}. Used from the command's thread only.
 */
interface BenchBroker extends AutoCloseable {

  /** What a run's consumer is given. */
  record Run(String destination, int maxBatchSize, int concurrency, long commitIntervalMillis, int maxPollRecords) {}

  /** {@code kafka}, {@code rabbitmq}, {@code sqs} or {@code jms}: the RESULT lines' {@code broker=}. */
  String name();

  /** Where the broker is and what it is (server version, in-JVM or not), for the output. */
  String describe();

  /** The address a peer command gets as {@code {bootstrap}}: bootstrap servers, AMQP URI, endpoint, URL. */
  String address();

  /**
   * The batch size of the batch variants when {@code --max-batch-size} is not given: Kafka 100
   * (a poll's records), SQS 10 (the most one receive returns), RabbitMQ and JMS 10 (the
   * adapters' defaults, docs/BROKERS.md).
   */
  int defaultBatchSize();

  /** Creates destination {@code id} (and its dead-letter destination) for one run. */
  void create(String id) throws Exception;

  /** Publishes every record of {@code stream} to {@code id}; returns when the broker has them all. */
  void publish(String id, OrderStream stream) throws Exception;

  /** Starts {@code variant}'s consumer on {@code run.destination()}; close the result to stop it. */
  AutoCloseable start(Variant variant, Run run, BenchDatabase db, Progress progress) throws Exception;

  /** Deletes destination {@code id} and what {@link #create} made with it. */
  void delete(String id);

  @Override
  void close();

  /** The broker named {@code name} ({@code kafka|rabbitmq|sqs|jms}) at {@code address} (null: the fixtures'). */
  static BenchBroker of(String name, @org.jspecify.annotations.Nullable String address) {
    return switch (name) {
      case "kafka" -> KafkaBench.connect(address);
      case "rabbitmq" -> RabbitBench.connect(address);
      case "sqs" -> SqsBench.connect(address);
      case "jms" -> JmsBench.connect(address);
      default -> throw new IllegalArgumentException(
          "--broker must be one of kafka, rabbitmq, sqs, jms, but was '" + name + "'");
    };
  }
}
