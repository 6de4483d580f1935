package io.idem.spring;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.deadletters.ActionReport;
import io.idem.deadletters.ActionResult;
import io.idem.deadletters.DeadLetter;
import io.idem.deadletters.DeadLetterGroup;
import io.idem.deadletters.DeadLetterOperations;
import io.idem.deadletters.DeadLetterSelection;
import io.idem.deadletters.ReplayOptions;
import io.idem.deadletters.spi.DeadLetterDestination;
import io.idem.store.jdbc.DeadLetterActions;
import io.idem.store.jdbc.DeadLetterDecisions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;

/**
 * Actuator's {@code /actuator/idem-dead-letters} (endpoint id {@value #ID}): the dead letters of
 * the application's {@link DeadLetterDestination} beans, and their replay through the
 * processed-events store, as {@code idem-cli dead-letters} does it (docs/DEAD-LETTERS.md).
 *
 * <ul>
 *   <li>{@code GET /actuator/idem-dead-letters}: each destination with its dead letters grouped;
 *   <li>{@code GET /actuator/idem-dead-letters/{destination}}: one destination's groups and dead
 *       letters (no payloads);
 *   <li>{@code POST /actuator/idem-dead-letters/{destination}} with a JSON body of {@code ids}
 *       (comma-separated), {@code group}, {@code cause}, {@code all}, {@code dryRun}, {@code
 *       maxReplays}, {@code force}: replays the selection, with the same rules and refusals; a
 *       selection is required ({@code all: true} for everything).
 * </ul>
 *
 * Off by default: registered only with {@code idem.dead-letters.endpoint.enabled=true}, and reached
 * over HTTP only once exposed ({@code management.endpoints.web.exposure.include=idemdeadletters}).
 * Each destination is used by one request at a time. Replays are recorded in {@code
 * idem_dead_letter_actions} with the operator {@code actuator}.
 */
@Endpoint(id = IdemDeadLettersEndpoint.ID)
public class IdemDeadLettersEndpoint {
  /** The endpoint id: {@value} (its web path is {@value #PATH}). */
  public static final String ID = "idemdeadletters";
  /** The web path under the Actuator base path: {@value}. */
  public static final String PATH = "idem-dead-letters";
  /** Who the record names for a replay made here: {@value}. */
  public static final String OPERATOR = "actuator";

  private final Map<String, DeadLetterDestination> destinations = new LinkedHashMap<>();
  private final DeadLetterDecisions decisions;
  private final DeadLetterActions actions;

  public IdemDeadLettersEndpoint(List<DeadLetterDestination> destinations, DeadLetterDecisions decisions,
      DeadLetterActions actions) {
    destinations.forEach(d -> this.destinations.put(d.name(), d));
    this.decisions = Objects.requireNonNull(decisions, "decisions");
    this.actions = Objects.requireNonNull(actions, "actions");
  }

  /** Every destination, its dead letters grouped. */
  @ReadOperation
  public Map<String, Object> list() {
    Map<String, Object> out = new LinkedHashMap<>();
    destinations.forEach((name, destination) -> {
      synchronized (destination) {
        List<DeadLetter> all = operations(destination).list(DeadLetterSelection.all());
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("broker", destination.broker());
        d.put("total", all.size());
        d.put("groups", groups(DeadLetterGroup.of(all)));
        out.put(name, d);
      }
    });
    return Map.of("destinations", out);
  }

  /** One destination's groups and dead letters; {@code null} (404) for an unknown one. */
  @ReadOperation
  public @Nullable Map<String, Object> destination(@Selector String destination) {
    DeadLetterDestination d = destinations.get(destination);
    if (d == null) {
      return null;
    }
    synchronized (d) {
      List<DeadLetter> all = operations(d).list(DeadLetterSelection.all());
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("destination", destination);
      out.put("broker", d.broker());
      out.put("total", all.size());
      out.put("groups", groups(DeadLetterGroup.of(all)));
      List<Object> letters = new ArrayList<>();
      for (DeadLetter l : all) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", l.id());
        m.put("group", DeadLetterGroup.idOf(l));
        DeadLetterReason r = l.reason();
        m.put("cause", r == null ? null : r.cause().name());
        m.put("key", l.key());
        m.put("consumerGroup", l.consumerGroup());
        m.put("detail", r == null ? null : r.detail());
        m.put("replayCount", l.replayCount());
        m.put("deadLetteredAt", l.deadLetteredAt() == null ? null : l.deadLetteredAt().toString());
        letters.add(m);
      }
      out.put("deadLetters", letters);
      return out;
    }
  }

  /**
   * Replays a selection of {@code destination}'s dead letters; {@code null} (404) for an unknown
   * destination.
   *
   * @throws IllegalArgumentException (400) without a selection
   */
  @WriteOperation
  public @Nullable Map<String, Object> replay(@Selector String destination, @Nullable String ids,
      @Nullable String group, @Nullable String cause, @Nullable Boolean all, @Nullable Boolean dryRun,
      @Nullable Integer maxReplays, @Nullable Boolean force) {
    DeadLetterDestination d = destinations.get(destination);
    if (d == null) {
      return null;
    }
    DeadLetterSelection selection;
    if (Boolean.TRUE.equals(all)) {
      selection = DeadLetterSelection.all();
    } else {
      DeadLetterSelection.Builder b = DeadLetterSelection.builder();
      if (ids != null && !ids.isBlank()) {
        b.ids(List.of(ids.split("\\s*,\\s*")));
      }
      if (group != null && !group.isBlank()) {
        b.groups(List.of(group));
      }
      if (cause != null && !cause.isBlank()) {
        b.causes(List.of(DeadLetterCause.valueOf(cause.trim())));
      }
      selection = b.build(); // without a criterion: IllegalArgumentException, a 400
    }
    ReplayOptions options = ReplayOptions.builder().dryRun(Boolean.TRUE.equals(dryRun))
        .maxReplays(maxReplays == null ? ReplayOptions.DEFAULT_MAX_REPLAYS : maxReplays)
        .force(Boolean.TRUE.equals(force)).build();
    ActionReport report;
    synchronized (d) {
      report = operations(d).replay(selection, options);
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("destination", destination);
    out.put("selection", report.selection());
    out.put("dryRun", report.dryRun());
    Map<String, Long> counts = new LinkedHashMap<>();
    for (ActionResult.Outcome o : ActionResult.Outcome.values()) {
      counts.put(o.name(), report.count(o));
    }
    out.put("counts", counts);
    List<Object> results = new ArrayList<>();
    for (ActionResult r : report.results()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("id", r.deadLetterId());
      m.put("key", r.key());
      m.put("outcome", r.outcome().name());
      m.put("detail", r.detail());
      results.add(m);
    }
    out.put("results", results);
    return out;
  }

  private DeadLetterOperations operations(DeadLetterDestination destination) {
    return DeadLetterOperations.builder(destination).decisions(decisions).actions(actions).operator(OPERATOR).build();
  }

  private static List<Object> groups(List<DeadLetterGroup> groups) {
    List<Object> out = new ArrayList<>();
    for (DeadLetterGroup g : groups) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("group", g.id());
      m.put("count", g.count());
      m.put("cause", g.cause() == null ? null : g.cause().name());
      m.put("source", g.source());
      m.put("exceptionClass", g.exceptionClass());
      m.put("consumerGroup", g.consumerGroup());
      m.put("first", g.first() == null ? null : g.first().toString());
      m.put("last", g.last() == null ? null : g.last().toString());
      out.add(m);
    }
    return out;
  }
}
