package io.idem.spring;

import java.lang.reflect.Method;
import java.util.List;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;
import org.springframework.kafka.listener.AcknowledgingConsumerAwareMessageListener;
import org.springframework.kafka.listener.BatchAcknowledgingConsumerAwareMessageListener;
import org.springframework.kafka.listener.BatchMessageListener;
import org.springframework.kafka.listener.MessageListener;
import org.springframework.kafka.listener.adapter.AbstractDelegatingMessageListenerAdapter;
import org.springframework.kafka.support.Acknowledgment;

/**
 * Idem's wrappers around a Spring Kafka container's listener (the way Spring Kafka's own {@code
 * FilteringMessageListenerAdapter} wraps one): each puts the record, or the poll's records, in
 * {@link CurrentDelivery} with the container's {@link KafkaBudget} and {@link KafkaAssignments},
 * and calls the container's listener, which converts them and calls the {@link Idempotent}
 * method. A record the container could not convert for the method goes to {@link Unconvertible}.
 */
final class IdemKafkaCapture {
  private IdemKafkaCapture() {}

  /** Around a record listener. */
  static final class Records extends AbstractDelegatingMessageListenerAdapter<MessageListener<Object, Object>>
      implements AcknowledgingConsumerAwareMessageListener<Object, Object> {
    private final KafkaBudget budget;
    private final KafkaAssignments assignments;
    private final Method method;
    private final Unconvertible unconvertible;

    Records(MessageListener<Object, Object> delegate, KafkaBudget budget, KafkaAssignments assignments,
        Method method, Unconvertible unconvertible) {
      super(delegate);
      this.budget = budget;
      this.assignments = assignments;
      this.method = method;
      this.unconvertible = unconvertible;
    }

    @Override
    public void onMessage(ConsumerRecord<Object, Object> record, @Nullable Acknowledgment acknowledgment,
        @Nullable Consumer<?, ?> consumer) {
      try {
        CurrentDelivery.with("kafka", record, budget, assignments, delivery -> {
          try {
            switch (delegateType) {
              case ACKNOWLEDGING_CONSUMER_AWARE -> delegate.onMessage(record, acknowledgment, consumer);
              case ACKNOWLEDGING -> delegate.onMessage(record, acknowledgment);
              case CONSUMER_AWARE -> delegate.onMessage(record, consumer);
              case SIMPLE -> delegate.onMessage(record);
            }
          } catch (RuntimeException e) {
            if (delivery.reached() || !Unconvertible.isConversionFailure(e)) {
              throw e;
            }
            unconvertible.deadLetter(method, record, e);
          }
          return null;
        });
      } catch (RuntimeException | Error e) {
        throw e;
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    public void onMessage(ConsumerRecord<Object, Object> data) {
      onMessage(data, null, null);
    }

    @Override
    public void onMessage(ConsumerRecord<Object, Object> data, @Nullable Acknowledgment acknowledgment) {
      onMessage(data, acknowledgment, null);
    }

    @Override
    public void onMessage(ConsumerRecord<Object, Object> data, @Nullable Consumer<?, ?> consumer) {
      onMessage(data, null, consumer);
    }
  }

  /** Around a batch listener. */
  static final class Batches extends AbstractDelegatingMessageListenerAdapter<BatchMessageListener<Object, Object>>
      implements BatchAcknowledgingConsumerAwareMessageListener<Object, Object> {
    private final KafkaBudget budget;
    private final KafkaAssignments assignments;

    Batches(BatchMessageListener<Object, Object> delegate, KafkaBudget budget, KafkaAssignments assignments) {
      super(delegate);
      this.budget = budget;
      this.assignments = assignments;
    }

    @Override
    public void onMessage(List<ConsumerRecord<Object, Object>> records, @Nullable Acknowledgment acknowledgment,
        @Nullable Consumer<?, ?> consumer) {
      try {
        CurrentDelivery.with("kafka", records, budget, assignments, delivery -> {
          switch (delegateType) {
            case ACKNOWLEDGING_CONSUMER_AWARE -> delegate.onMessage(records, acknowledgment, consumer);
            case ACKNOWLEDGING -> delegate.onMessage(records, acknowledgment);
            case CONSUMER_AWARE -> delegate.onMessage(records, consumer);
            case SIMPLE -> delegate.onMessage(records);
          }
          return null;
        });
      } catch (RuntimeException | Error e) {
        throw e;
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    public void onMessage(List<ConsumerRecord<Object, Object>> data) {
      onMessage(data, null, null);
    }

    @Override
    public void onMessage(List<ConsumerRecord<Object, Object>> data, @Nullable Acknowledgment acknowledgment) {
      onMessage(data, acknowledgment, null);
    }

    @Override
    public void onMessage(List<ConsumerRecord<Object, Object>> data, @Nullable Consumer<?, ?> consumer) {
      onMessage(data, null, consumer);
    }
  }
}
