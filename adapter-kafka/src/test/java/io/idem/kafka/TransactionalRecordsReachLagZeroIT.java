package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.RetryPolicy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/**
 * Offsets are committed from the consumer's next fetch offset, which steps over transaction
 * markers and aborted records: a partition whose last record was written in a transaction reaches
 * lag 0 (committing last offset + 1 left it at lag 1 for good, the commit marker's offset) — and
 * the commit still never passes a record that is not settled.
 */
class TransactionalRecordsReachLagZeroIT extends KafkaITSupport {

  /** Attempts enough that the failing record is never dead-lettered while the test holds it. */
  @Override
  protected RetryPolicy retryPolicy() {
    return RetryPolicy.builder().maxAttempts(1000).initialBackoff(Duration.ofMillis(100))
        .maxBackoff(Duration.ofMillis(100)).multiplier(1.0).jitter(0).build();
  }

  @Test
  void aPartitionEndingWithACommittedTransactionReachesLagZero() {
    List<String> applied = new CopyOnWriteArrayList<>();
    try (KafkaProducer<byte[], byte[]> tx = transactionalProducer()) {
      tx.initTransactions();
      sendInTransaction(tx, true, "tx-1", "tx-2");
      sendInTransaction(tx, false, "aborted-1");
      sendInTransaction(tx, true, "tx-3");
    }
    // 4 records + 3 markers: the log ends past the last record's offset + 1
    long end = awaitLogEnd(7);

    start((message, session) -> {
      applied.add(keyOf(message));
      TestEffects.record(session, keyOf(message), message.payload());
    }, b -> b);

    await("committed offset at the log end offset (lag 0)").atMost(TIMEOUT)
        .until(() -> committed(0) == end);
    assertThat(lag()).isZero();
    assertThat(applied).containsExactly("tx-1", "tx-2", "tx-3");
  }

  @Test
  void theCommitNeverPassesARecordThatIsNotSettled() {
    AtomicBoolean healed = new AtomicBoolean();
    List<Long> committedWhileFailing = new CopyOnWriteArrayList<>();
    try (KafkaProducer<byte[], byte[]> tx = transactionalProducer()) {
      tx.initTransactions();
      sendInTransaction(tx, true, "ok-1", "poison-until-healed");
    }
    long end = awaitLogEnd(3);

    start((message, session) -> {
      TestEffects.record(session, keyOf(message), message.payload());
      if (keyOf(message).startsWith("poison") && !healed.get()) {
        committedWhileFailing.add(committed(0));
        throw new IllegalStateException("fails until healed");
      }
    }, b -> b);

    await("the failing record retried").atMost(TIMEOUT).until(() -> committedWhileFailing.size() >= 2);
    // offset 0 settled, offset 1 (the failing record) is not: the commit stays at 1
    assertThat(committed(0)).isEqualTo(1);
    assertThat(committedWhileFailing).allMatch(offset -> offset <= 1);
    healed.set(true);
    await("committed offset at the log end offset").atMost(TIMEOUT).until(() -> committed(0) == end);
    assertThat(effects.count("poison-until-healed")).isEqualTo(1);
  }

  /** The coordinator writes the markers after commitTransaction() returns: waits for them. */
  private long awaitLogEnd(long expected) {
    TopicPartition partition = new TopicPartition(topic, 0);
    await("transaction markers written").atMost(TIMEOUT)
        .until(() -> KafkaTestClients.endOffsets(topic).get(partition) == expected);
    return expected;
  }

  private KafkaProducer<byte[], byte[]> transactionalProducer() {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaTestClients.bootstrap());
    props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "tx-" + topic);
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    return new KafkaProducer<>(props);
  }

  private void sendInTransaction(KafkaProducer<byte[], byte[]> tx, boolean commit, String... keys) {
    tx.beginTransaction();
    for (String key : keys) {
      RecordHeaders headers = new RecordHeaders();
      headers.add(KEY, key.getBytes(StandardCharsets.UTF_8));
      tx.send(new ProducerRecord<>(topic, 0, key.getBytes(StandardCharsets.UTF_8),
          "{}".getBytes(StandardCharsets.UTF_8), headers));
    }
    tx.flush(); // an aborted transaction's records reach the log too (else abort drops them unsent)
    if (commit) {
      tx.commitTransaction();
    } else {
      tx.abortTransaction();
    }
  }
}
