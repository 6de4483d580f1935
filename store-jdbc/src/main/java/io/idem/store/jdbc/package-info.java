/**
 * The processed-events store on MyBatis and PostgreSQL: {@link
 * io.idem.store.jdbc.MyBatisProcessedEventStore} runs each message in one transaction of the
 * application's own {@code SqlSessionFactory}, so the handler's mapper calls and the dedup marker
 * commit together. Schema: {@code classpath:db/migration/idem/V1__processed_events.sql}, then
 * {@code V3__processed_events_dead_letters.sql} (the dead-letter decisions).
 */
@NullMarked
package io.idem.store.jdbc;

import org.jspecify.annotations.NullMarked;
