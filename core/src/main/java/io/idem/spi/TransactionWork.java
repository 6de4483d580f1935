package io.idem.spi;

/**
 * Work run inside one store transaction by {@link ProcessedEventStore#inTransaction}.
 *
 * @param <C> the transaction context (for {@code idem-store-jdbc}, the MyBatis {@code SqlSession})
 * @param <T> the result
 */
@FunctionalInterface
public interface TransactionWork<C, T> {
  T run(C transaction) throws Exception;
}
