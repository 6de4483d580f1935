package io.idem.benchmarks;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The benchmark's stream: {@code events} OrderPaid records, of which {@code retryRate} are producer
 * retries: an earlier order sent again, shortly after, with the same bytes, the same Kafka key
 * (so the same partition) and the same {@code idempotency-key} header.
 */
final class OrderStream {
  static final String KEY_HEADER = "idempotency-key";

  /** One record to publish. */
  record Order(String orderId, byte[] payload) {}

  private final List<Order> records;
  private final List<String> orderIds;

  private OrderStream(List<Order> records, List<String> orderIds) {
    this.records = records;
    this.orderIds = orderIds;
  }

  static OrderStream generate(int events, double retryRate, long seed) {
    Random random = new Random(seed);
    int retries = (int) Math.round(events * retryRate);
    int unique = events - retries;
    List<Order> originals = new ArrayList<>(unique);
    List<String> ids = new ArrayList<>(unique);
    for (int i = 0; i < unique; i++) {
      String id = "order-" + i;
      String json = "{\"type\":\"OrderPaid\",\"orderId\":\"" + id + "\",\"amountCents\":"
          + (100 + random.nextInt(100_000)) + ",\"currency\":\"EUR\"}";
      originals.add(new Order(id, json.getBytes(StandardCharsets.UTF_8)));
      ids.add(id);
    }
    // retries[i] = how many copies follow original i; a copy is sent a few records after it
    int[] copies = new int[unique];
    for (int r = 0; r < retries; r++) {
      copies[random.nextInt(unique)]++;
    }
    List<List<Order>> pending = new ArrayList<>();
    List<Order> stream = new ArrayList<>(events);
    for (int i = 0; i < unique; i++) {
      stream.add(originals.get(i));
      for (int c = 0; c < copies[i]; c++) {
        int delay = 1 + random.nextInt(20);
        while (pending.size() <= delay) {
          pending.add(new ArrayList<>());
        }
        pending.get(delay).add(originals.get(i));
      }
      if (!pending.isEmpty()) {
        stream.addAll(pending.remove(0));
      }
    }
    pending.forEach(stream::addAll);
    return new OrderStream(stream, ids);
  }

  List<Order> records() {
    return records;
  }

  /** The distinct order ids: one effect each is the correct outcome. */
  List<String> orderIds() {
    return orderIds;
  }

  int size() {
    return records.size();
  }

  /** Publishes every record to {@code topic} (acks=all) and waits until all are written. */
  void publish(String bootstrap, String topic) {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.LINGER_MS_CONFIG, 5);
    props.put(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
    // on a loaded machine the in-JVM broker answers slowly: wait long rather than expire batches,
    // and one request in flight so that a retried batch cannot arrive out of sequence
    props.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
    props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 120_000);
    props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 600_000);
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
      List<Future<RecordMetadata>> sent = new ArrayList<>();
      for (Order o : records) {
        byte[] key = o.orderId().getBytes(StandardCharsets.UTF_8);
        ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, key, o.payload());
        record.headers().add(KEY_HEADER, key);
        sent.add(producer.send(record));
        if (sent.size() >= 10_000) {
          await(sent);
        }
      }
      await(sent);
    }
  }

  private static void await(List<Future<RecordMetadata>> sent) {
    try {
      for (Future<RecordMetadata> f : sent) {
        f.get();
      }
      sent.clear();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while publishing", e);
    } catch (ExecutionException e) {
      throw new IllegalStateException("publishing failed: " + e.getCause(), e.getCause());
    }
  }
}
