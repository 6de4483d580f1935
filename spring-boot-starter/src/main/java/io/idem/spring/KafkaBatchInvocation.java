package io.idem.spring;

import io.idem.BatchOrder;
import io.idem.BatchResult;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeyedMessage;
import io.idem.ProcessingOutcome;
import io.idem.spi.Acknowledgement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.ibatis.session.SqlSession;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.jspecify.annotations.Nullable;

/**
 * One call of an {@link Idempotent} Kafka batch listener ({@code List<ConsumerRecord>}, {@code
 * List<Message<?>>}, {@code List<String>}, {@code List<Pojo>}), mapped onto Idem's batch mode
 * (docs/DESIGN.md, "Batch mode"): per partition of the poll, in order, one {@link
 * IdempotentConsumer#processBatch(List, List, BatchOrder) processBatch} with {@link
 * BatchOrder#ORDERED} — one transaction, one multi-row claim, the method called once with the
 * partition's new records (its list argument cut down to them, in order), one COMMIT. Duplicates
 * are left out of the list, keyless and conflicting records dead-lettered. When the batch fails,
 * Idem's batch rules redo it record by record (the method then gets one-element lists). What is
 * not settled — from the first record handed back, per partition — is retried in the same call
 * while the {@link KafkaBudget} allows, then handed back to the container ({@link
 * KafkaBatchHandBack}): the settled records are committed, the rest sought back and the partition
 * paused for the backoff. A record of a partition not yet settled by an applied record in this
 * life ({@link KafkaAssignments}) is flagged as an unaccounted redelivery: Idem's batch rules then
 * process that partition's batch message by message, each flagged record's attempt counted in the
 * store before its own handler run, so a record that kills the process dies alone (docs/FAILURES.md,
 * "Attempts that survive the process"). Confined to the listener thread.
 */
final class KafkaBatchInvocation {
  private final KafkaDeliveries kind;
  private final IdempotentListenerInterceptor.BatchCall call;
  private final List<Object> arguments;

  KafkaBatchInvocation(KafkaDeliveries kind, IdempotentListenerInterceptor.BatchCall call) {
    this.kind = kind;
    this.call = call;
    MethodBinding binding = call.binding;
    if (binding.listParameter() < 0) {
      throw new IllegalStateException(binding.name() + " is a batch listener but takes no List of"
          + " the poll's records, messages or payloads");
    }
    Object list = call.invocation.getArguments()[binding.listParameter()];
    if (!(list instanceof List<?> elements) || elements.size() != call.records.size()) {
      throw new IllegalStateException(binding.name() + " got a list of "
          + (list instanceof List<?> l ? l.size() : 0) + " elements for a poll of "
          + call.records.size() + " records: Idem needs one element per record, in order");
    }
    @SuppressWarnings("unchecked")
    List<Object> typed = (List<Object>) elements;
    this.arguments = typed;
  }

  @Nullable Object run() throws Throwable {
    Map<TopicPartition, List<Integer>> pending = new LinkedHashMap<>();
    for (int i = 0; i < call.records.size(); i++) {
      ConsumerRecord<?, ?> record = (ConsumerRecord<?, ?>) call.records.get(i);
      pending.computeIfAbsent(new TopicPartition(record.topic(), record.partition()), tp -> new ArrayList<>()).add(i);
    }
    IdempotentConsumer<SqlSession> pipeline = call.pipeline();
    KafkaBudget budget = call.budget;
    long started = System.nanoTime();
    Object[] lastResult = new Object[1];
    while (true) {
      Map<TopicPartition, Duration> delays = new HashMap<>();
      ProcessingOutcome why = ProcessingOutcome.RETRY;
      for (Map.Entry<TopicPartition, List<Integer>> partition : new ArrayList<>(pending.entrySet())) {
        Step step = runPartition(pipeline, partition.getValue(), lastResult);
        if (step.from >= partition.getValue().size()) {
          pending.remove(partition.getKey());
        } else {
          pending.put(partition.getKey(), partition.getValue().subList(step.from, partition.getValue().size()));
          delays.put(partition.getKey(), step.delay);
          why = step.outcome;
          if (step.outcome == ProcessingOutcome.RELEASED) {
            break;
          }
        }
      }
      if (pending.isEmpty()) {
        return lastResult[0];
      }
      Duration wait = delays.values().stream().max(Duration::compareTo).orElse(Duration.ZERO);
      if (why != ProcessingOutcome.RELEASED && budget != null
          && IdempotentListenerInterceptor.fits(started, wait, budget.perCall())
          && IdempotentListenerInterceptor.sleep(wait)) {
        continue;
      }
      Map<TopicPartition, Long> firstUnsettled = new LinkedHashMap<>();
      Map<TopicPartition, Duration> pauses = new LinkedHashMap<>();
      boolean released = why == ProcessingOutcome.RELEASED;
      pending.forEach((tp, indices) -> {
        firstUnsettled.put(tp, ((ConsumerRecord<?, ?>) call.records.get(indices.get(0))).offset());
        pauses.put(tp, released ? Duration.ZERO : delays.getOrDefault(tp, Duration.ZERO));
      });
      throw new KafkaBatchHandBack(why, firstUnsettled, pauses);
    }
  }

  /** What one partition's batch left: the first index (into its list) not settled, and why. */
  private record Step(int from, ProcessingOutcome outcome, Duration delay) {}

  private Step runPartition(IdempotentConsumer<SqlSession> pipeline, List<Integer> indices, Object[] lastResult)
      throws Throwable {
    MethodBinding binding = call.binding;
    List<InboundMessage> messages = new ArrayList<>(indices.size());
    List<Acknowledgement> acknowledgements = new ArrayList<>(indices.size());
    List<DropInAcknowledgement> ours = new ArrayList<>(indices.size());
    List<String> deliveries = new ArrayList<>(indices.size());
    Map<String, Integer> byBrokerId = new HashMap<>();
    for (int index : indices) {
      Object record = call.records.get(index);
      String delivery = binding.consumerGroup() + "|" + kind.deliveryId(record);
      deliveries.add(delivery);
      messages.add(kind.toInbound(record, call.attempts().next(delivery), call.unaccounted(delivery, record,
          pipeline.retryPolicy().maxAttempts())));
      byBrokerId.put(kind.deliveryId(record), index);
      DropInAcknowledgement acknowledgement = new DropInAcknowledgement(kind, record, binding.deadLetter());
      ours.add(acknowledgement);
      acknowledgements.add(acknowledgement);
    }
    BatchResult result;
    try {
      result = IdemPipelines.batchHandlerScope((newMessages, session) -> {
        List<Object> subset = new ArrayList<>(newMessages.size());
        for (KeyedMessage keyed : newMessages) {
          Integer index = byBrokerId.get(keyed.message().brokerMessageId());
          if (index == null) {
            throw new IllegalStateException("a batch message Idem did not hand over: " + keyed.message());
          }
          Object element = arguments.get(index);
          if (element == null && ((ConsumerRecord<?, ?>) call.records.get(index)).value() != null) {
            // Spring Kafka puts null for a record its converter could not convert (the failure in
            // the conversion-failures header): this batch is redone one by one, and that record
            // dead-lettered, never handed to the method
            throw new io.idem.NonRetryableException("the container could not convert "
                + kind.deliveryId(call.records.get(index)) + " for " + binding.name());
          }
          subset.add(element);
        }
        Object[] args = call.invocation.getArguments().clone();
        args[binding.listParameter()] = subset;
        lastResult[0] = IdempotentListenerInterceptor.proceed(call.invocation, args);
      }, () -> pipeline.processBatch(messages, acknowledgements, BatchOrder.ORDERED));
    } catch (RuntimeException notSettled) {
      // an acknowledgement threw (a dead-letter copy not stored): what was settled before it
      // stays settled, everything from the first delivery not settled comes back
      int from = 0;
      while (from < ours.size() && ours.get(from).settled()) {
        call.attempts().settled(deliveries.get(from));
        call.unsettled().settled(deliveries.get(from));
        from++;
      }
      Duration delay = call.unsettled().failed(deliveries.get(Math.min(from, deliveries.size() - 1)),
          notSettled, pipeline.retryPolicy());
      return new Step(Math.min(from, ours.size() - 1), ProcessingOutcome.DEAD_LETTERED, delay);
    }
    List<ProcessingOutcome> outcomes = result.outcomes();
    for (int i = 0; i < outcomes.size(); i++) {
      ProcessingOutcome outcome = outcomes.get(i);
      if (outcome.isSettled()) {
        call.attempts().settled(deliveries.get(i));
        call.unsettled().settled(deliveries.get(i));
        if (outcome == ProcessingOutcome.PROCESSED) {
          call.applied(call.records.get(indices.get(i)));
        }
        continue;
      }
      if (outcome == ProcessingOutcome.RETRY) {
        call.attempts().failed(deliveries.get(i));
      }
      return new Step(i, outcome, ours.get(i).delay());
    }
    return new Step(outcomes.size(), ProcessingOutcome.RETRY, Duration.ZERO);
  }
}
