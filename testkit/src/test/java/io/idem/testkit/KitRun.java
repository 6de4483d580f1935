package io.idem.testkit;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Event;
import org.junit.platform.testkit.engine.Events;

/** One run of a kit subclass through the JUnit Platform, as a build would run it. */
record KitRun(Set<String> failed, Set<String> succeeded, Set<String> skipped) {

  /**
   * Runs {@code kit} without its crash tests (tag {@value BrokerAdapterCompatibilityKit#CRASH_MATRIX_TAG}):
   * the fakes' broker lives in this JVM and cannot outlive the crash matrix's child JVM; the
   * matrix's own self-test is {@code CrashMatrixRejectsWrongAdaptersTest}.
   */
  static KitRun of(Class<?> kit) {
    EngineExecutionResults results = EngineTestKit.engine("junit-jupiter").selectors(selectClass(kit))
        .filters(org.junit.platform.launcher.TagFilter.excludeTags(BrokerAdapterCompatibilityKit.CRASH_MATRIX_TAG))
        .execute();
    Events tests = results.testEvents();
    return new KitRun(names(tests.failed().list()), names(tests.succeeded().list()),
        names(tests.skipped().list()));
  }

  private static Set<String> names(List<Event> events) {
    return events.stream()
        .map(e -> e.getTestDescriptor().getSource()
            .filter(MethodSource.class::isInstance)
            .map(s -> ((MethodSource) s).getMethodName())
            .orElse(e.getTestDescriptor().getDisplayName()))
        .collect(Collectors.toCollection(TreeSet::new));
  }

  int total() {
    return failed.size() + succeeded.size() + skipped.size();
  }
}
