package io.idem.benchmarks;

import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The no-dedup ceilings: a plain {@code KafkaConsumer} (auto-commit off, Kafka's default
 * {@code max.poll.records} 500 unless {@code --max-poll-records} is given) writing each record's effect, then {@code commitSync()} after each
 * poll. Per record: one JDBC transaction per record ({@code INSERT; COMMIT}). Batched: one
 * transaction and one multi-row {@code INSERT … SELECT unnest(?)} per poll. Producer retries are
 * applied twice: a non-zero {@code doubled} is expected.
 */
final class RawConsumer implements AutoCloseable {
  private final Consumers.Setup setup;
  private final BenchDatabase db;
  private final boolean batched;
  private final Progress progress;
  private final Thread thread;
  private volatile boolean running = true;
  private volatile KafkaConsumer<byte[], byte[]> consumer;

  RawConsumer(Consumers.Setup setup, BenchDatabase db, boolean batched, Progress progress) {
    this.setup = setup;
    this.db = db;
    this.batched = batched;
    this.progress = progress;
    this.thread = new Thread(this::run, "raw-consumer-" + setup.group());
  }

  void start() {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, setup.bootstrap());
    props.put(ConsumerConfig.GROUP_ID_CONFIG, setup.group());
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    if (setup.maxPollRecords() > 0) {
      props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, setup.maxPollRecords());
    }
    if (setup.crashRun()) {
      props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, Consumers.CRASH_SESSION_TIMEOUT_MS);
    }
    consumer = new KafkaConsumer<>(props);
    consumer.subscribe(List.of(setup.topic()));
    thread.start();
  }

  private void run() {
    try (EffectsWriter effects = new EffectsWriter(db)) {
      while (running) {
        ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
        if (records.isEmpty()) {
          continue;
        }
        progress.begin();
        long polled = System.nanoTime();
        if (batched) {
          List<String> ids = new ArrayList<>(records.count());
          records.forEach(r -> ids.add(orderId(r)));
          effects.applyAll(ids);
          progress.settled(records.count(), System.nanoTime() - polled);
        } else {
          for (ConsumerRecord<byte[], byte[]> r : records) {
            long start = System.nanoTime();
            effects.applyOne(orderId(r));
            progress.settled(1, System.nanoTime() - start);
          }
        }
        consumer.commitSync();
      }
    } catch (WakeupException stopping) {
      // close() woke the poll up
    } catch (SQLException e) {
      System.err.println("raw consumer failed: " + e.getMessage());
    } finally {
      consumer.close();
    }
  }

  private static String orderId(ConsumerRecord<byte[], byte[]> r) {
    return new String(r.headers().lastHeader(OrderStream.KEY_HEADER).value(), StandardCharsets.UTF_8);
  }

  @Override
  public void close() throws InterruptedException {
    running = false;
    consumer.wakeup();
    thread.join(30_000);
  }
}
