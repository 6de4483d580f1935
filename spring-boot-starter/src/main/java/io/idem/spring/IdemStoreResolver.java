package io.idem.spring;

import io.idem.store.jdbc.Dialect;
import java.lang.reflect.Method;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.NoSuchBeanDefinitionException;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.util.ReflectionUtils;

/**
 * Which {@link DataSource} and {@link PlatformTransactionManager} Idem's store runs on. Never
 * guesses and never backs off silently: with one data source (or one {@code @Primary}) that one;
 * with several, the one {@code idem.datasource} names; the transaction manager is the one managing
 * it (or the one {@code idem.transaction-manager} names). What cannot be decided fails start-up
 * with what is missing and the property that picks it. Stateless.
 */
final class IdemStoreResolver {
  private IdemStoreResolver() {}

  static DataSource dataSource(ConfigurableListableBeanFactory beans, IdemProperties properties) {
    String[] names = beans.getBeanNamesForType(DataSource.class, false, false);
    String wanted = properties.getDatasource();
    if (wanted != null && !wanted.isBlank()) {
      try {
        return beans.getBean(wanted, DataSource.class);
      } catch (NoSuchBeanDefinitionException e) {
        throw new IllegalStateException("Idem: idem.datasource names '" + wanted + "', but there is no"
            + " DataSource bean of that name; the application's DataSource beans are " + Arrays.toString(names), e);
      }
    }
    if (names.length == 1) {
      return beans.getBean(names[0], DataSource.class);
    }
    List<String> primary = new ArrayList<>();
    for (String name : names) {
      if (beans.containsBeanDefinition(name) && beans.getBeanDefinition(name).isPrimary()) {
        primary.add(name);
      }
    }
    if (primary.size() == 1) {
      return beans.getBean(primary.get(0), DataSource.class);
    }
    throw new IllegalStateException("Idem: the application has " + names.length + " DataSource beans "
        + Arrays.toString(names) + (primary.isEmpty() ? " and none is @Primary" : " and several are @Primary")
        + ": set idem.datasource to the name of the one that holds Idem's processed-events table and"
        + " the listeners' own tables (their writes must commit in the same transaction)");
  }

  /**
   * The database of Idem's data source, read from one connection's JDBC metadata before anything
   * is sent to it (Idem's Flyway migration included, whose scripts are per database): store-jdbc's
   * {@link Dialect}. {@code null} when no connection can be had now — the store's build then
   * decides (it fails start-up with the outage unless the table checks are off).
   *
   * @throws IllegalStateException when the database is one Idem does not support, naming it and
   *     the supported ones
   */
  static @Nullable Dialect dialect(DataSource dataSource) {
    try (Connection connection = dataSource.getConnection()) {
      return Dialect.of(connection.getMetaData());
    } catch (IllegalStateException unsupported) {
      throw new IllegalStateException("Idem: the application's DataSource for Idem's processed-events"
          + " table is not a database Idem supports: " + unsupported.getMessage()); // the whole reason: no cause
    } catch (SQLException | RuntimeException unreachable) {
      return null;
    }
  }

  static PlatformTransactionManager transactionManager(ConfigurableListableBeanFactory beans,
      IdemProperties properties, DataSource dataSource) {
    String[] names = beans.getBeanNamesForType(PlatformTransactionManager.class, false, false);
    String wanted = properties.getTransactionManager();
    if (wanted != null && !wanted.isBlank()) {
      PlatformTransactionManager named;
      try {
        named = beans.getBean(wanted, PlatformTransactionManager.class);
      } catch (NoSuchBeanDefinitionException e) {
        throw new IllegalStateException("Idem: idem.transaction-manager names '" + wanted + "', but"
            + " there is no PlatformTransactionManager bean of that name; the application's are "
            + Arrays.toString(names), e);
      }
      DataSource managed = managedDataSource(named);
      if (managed != null && !same(managed, dataSource)) {
        throw new IllegalStateException("Idem: idem.transaction-manager '" + wanted + "' manages another"
            + " DataSource than Idem's: the marker would not commit with the listeners' writes; name"
            + " the transaction manager of Idem's DataSource (or set idem.datasource to its DataSource)");
      }
      return named;
    }
    if (names.length == 0) {
      throw new IllegalStateException("Idem: the application has no PlatformTransactionManager bean:"
          + " Idem opens each message's transaction through the application's transaction manager."
          + " Spring Boot creates one for a single DataSource; with several DataSources (or your own"
          + " configuration) define a JdbcTransactionManager (or JpaTransactionManager) for Idem's"
          + " DataSource, and name it with idem.transaction-manager if there are several");
    }
    List<String> managing = new ArrayList<>();
    List<String> unknown = new ArrayList<>();
    for (String name : names) {
      DataSource managed = managedDataSource(beans.getBean(name, PlatformTransactionManager.class));
      if (managed == null) {
        unknown.add(name);
      } else if (same(managed, dataSource)) {
        managing.add(name);
      }
    }
    if (managing.size() == 1) {
      return beans.getBean(managing.get(0), PlatformTransactionManager.class);
    }
    if (managing.isEmpty() && unknown.size() == 1 && names.length == 1) {
      return beans.getBean(unknown.get(0), PlatformTransactionManager.class); // JTA and the like
    }
    throw new IllegalStateException("Idem: " + (managing.isEmpty()
        ? "none of the PlatformTransactionManager beans " + Arrays.toString(names) + " manages Idem's DataSource"
        : "several PlatformTransactionManager beans manage Idem's DataSource: " + managing)
        + ": set idem.transaction-manager to the one Idem opens each message's transaction with");
  }

  /** The data source a transaction manager manages ({@code getDataSource()}), or null when it has none. */
  private static @Nullable DataSource managedDataSource(PlatformTransactionManager manager) {
    Method getter = ReflectionUtils.findMethod(manager.getClass(), "getDataSource");
    if (getter == null || !DataSource.class.isAssignableFrom(getter.getReturnType())) {
      return null;
    }
    try {
      return (DataSource) getter.invoke(manager);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  private static boolean same(DataSource a, DataSource b) {
    return unwrap(a) == unwrap(b);
  }

  private static DataSource unwrap(DataSource dataSource) {
    DataSource current = dataSource;
    while (current instanceof DelegatingDataSource delegating && delegating.getTargetDataSource() != null) {
      current = delegating.getTargetDataSource();
    }
    return current;
  }
}
