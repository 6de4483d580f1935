package io.idem.examples;

import io.idem.IdempotentConsumer;
import io.idem.MicrometerIdempotencyListener;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;

/**
 * {@link Billing#pipeline} with Micrometer meters (docs/METRICS.md). Needs
 * {@code io.micrometer:micrometer-core} on the classpath: an optional dependency of idem-core.
 */
public final class MeteredBilling {
  private MeteredBilling() {}

  public static IdempotentConsumer<SqlSession> pipeline(
      SqlSessionFactory sqlSessionFactory, MeterRegistry meterRegistry) {
    var store = MyBatisProcessedEventStore.builder(sqlSessionFactory).createTableIfMissing(true).build();
    return IdempotentConsumer.builder(store)
        .consumerGroup("billing")
        .listener(new MicrometerIdempotencyListener(meterRegistry, "billing"))
        .handler((key, message, session) -> session.getMapper(Payments.class).charge(key.value()))
        .build();
  }
}
