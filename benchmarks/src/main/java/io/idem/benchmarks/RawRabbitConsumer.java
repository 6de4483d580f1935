package io.idem.benchmarks;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The plain RabbitMQ consumer: manual acks, {@code basicQos(prefetch)}, the client's dispatch
 * thread only buffers deliveries. Per message: {@code INSERT; COMMIT}, then {@code
 * basicAck(tag, false)}. Batched: the delivery taken and those buffered behind it (waiting at
 * most 5 ms once when fewer than the batch size are there, as Idem's batch mode does), one
 * transaction, then one {@code basicAck(last tag, multiple=true)}.
 */
final class RawRabbitConsumer extends RawQueueConsumer {
  /** The batch's one wait for more deliveries, as {@code RabbitIdempotentConsumer}'s. */
  private static final long LINGER_MILLIS = 5;

  private record Delivery(long tag, String orderId) {}

  private final String uri;
  private final String queue;
  private final int prefetch;
  private final LinkedBlockingQueue<Delivery> buffer = new LinkedBlockingQueue<>();
  private Connection connection;
  private Channel channel;

  RawRabbitConsumer(String uri, String queue, int prefetch, BenchDatabase db, Progress progress, boolean batched,
      int batchSize) {
    super(queue, db, progress, batched, batchSize);
    this.uri = uri;
    this.queue = queue;
    this.prefetch = prefetch;
  }

  @Override
  void open() throws Exception {
    connection = RabbitBench.factory(uri).newConnection("raw-consumer-" + queue);
    channel = connection.createChannel();
    channel.basicQos(prefetch);
    channel.basicConsume(queue, false, new DefaultConsumer(channel) {
      @Override
      public void handleDelivery(String consumerTag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
        buffer.add(new Delivery(envelope.getDeliveryTag(),
            String.valueOf(properties.getHeaders().get(OrderStream.KEY_HEADER))));
      }
    });
  }

  @Override
  void receiveAndApply(EffectsWriter effects) throws Exception {
    Delivery first = buffer.poll(RECEIVE_WAIT.toMillis(), TimeUnit.MILLISECONDS);
    if (first == null) {
      return;
    }
    progress.begin();
    long start = System.nanoTime();
    if (!batched) {
      effects.applyOne(first.orderId());
      channel.basicAck(first.tag(), false);
      progress.settled(1, System.nanoTime() - start);
      return;
    }
    List<Delivery> batch = new ArrayList<>(batchSize);
    batch.add(first);
    buffer.drainTo(batch, batchSize - 1);
    if (batch.size() < batchSize) {
      Delivery more = buffer.poll(LINGER_MILLIS, TimeUnit.MILLISECONDS);
      if (more != null) {
        batch.add(more);
        buffer.drainTo(batch, batchSize - batch.size());
      }
    }
    List<String> ids = new ArrayList<>(batch.size());
    batch.forEach(d -> ids.add(d.orderId()));
    effects.applyAll(ids);
    // every tag up to the last one on this channel is this batch's: one consumer thread, FIFO buffer
    channel.basicAck(batch.get(batch.size() - 1).tag(), true);
    progress.settled(batch.size(), System.nanoTime() - start);
  }

  @Override
  void shut() {
    try {
      connection.close();
    } catch (Exception e) {
      // closing anyway
    }
  }
}
