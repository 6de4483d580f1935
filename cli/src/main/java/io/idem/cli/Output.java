package io.idem.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.idem.DeadLetterReason;
import io.idem.deadletters.ActionReport;
import io.idem.deadletters.ActionResult;
import io.idem.deadletters.DeadLetter;
import io.idem.deadletters.DeadLetterGroup;
import io.idem.deadletters.DeadLetterHeaders;
import io.idem.spi.Utf8;
import io.idem.store.jdbc.DeadLetterActions;
import java.io.PrintWriter;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** How the commands print: aligned tables for people, JSON for scripts. */
final class Output {
  private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
  private static final String NONE = "-";

  private Output() {}

  static void json(PrintWriter out, Object value) {
    try {
      out.println(JSON.writeValueAsString(value));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("could not write JSON: " + e.getMessage(), e);
    }
  }

  /** The groups as a table, with a heading line. */
  static void groups(PrintWriter out, String destination, String broker, List<DeadLetterGroup> groups, int total,
      boolean truncated) {
    out.println(total + " dead letter" + (total == 1 ? "" : "s") + " in " + destination + " (" + broker + "), "
        + groups.size() + " group" + (groups.size() == 1 ? "" : "s") + (truncated ? " (the first " + total
        + " read: raise --max-scan for more)" : ""));
    if (groups.isEmpty()) {
      return;
    }
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"GROUP", "COUNT", "CAUSE", "SOURCE", "EXCEPTION", "CONSUMER GROUP", "FIRST", "LAST"});
    for (DeadLetterGroup g : groups) {
      rows.add(new String[] {g.id(), Integer.toString(g.count()),
          g.cause() == null ? "(not Idem's)" : g.cause().name(), or(g.source()), or(g.exceptionClass()),
          or(g.consumerGroup()), time(g.first()), time(g.last())});
    }
    table(out, rows);
  }

  /** One row per dead letter. */
  static void messages(PrintWriter out, List<DeadLetter> deadLetters) {
    if (deadLetters.isEmpty()) {
      return;
    }
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"ID", "GROUP", "CAUSE", "KEY", "ATTEMPT", "REPLAYS", "DEAD-LETTERED", "DETAIL"});
    for (DeadLetter d : deadLetters) {
      DeadLetterReason r = d.reason();
      rows.add(new String[] {d.id(), DeadLetterGroup.idOf(d), r == null ? "(not Idem's)" : r.cause().name(),
          or(d.key()), r == null ? NONE : Integer.toString(r.attempt()), Integer.toString(d.replayCount()),
          time(d.deadLetteredAt()), r == null ? NONE : shorten(r.detail(), 60)});
    }
    table(out, rows);
  }

  static Map<String, Object> listJson(String destination, String broker, List<DeadLetterGroup> groups,
      List<DeadLetter> deadLetters, boolean truncated) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("destination", destination);
    m.put("broker", broker);
    m.put("total", deadLetters.size());
    m.put("truncated", truncated);
    List<Object> gs = new ArrayList<>();
    for (DeadLetterGroup g : groups) {
      Map<String, Object> j = new LinkedHashMap<>();
      j.put("group", g.id());
      j.put("count", g.count());
      j.put("cause", g.cause() == null ? null : g.cause().name());
      j.put("idems", g.cause() != null);
      j.put("source", g.source());
      j.put("exceptionClass", g.exceptionClass());
      j.put("consumerGroup", g.consumerGroup());
      j.put("first", g.first() == null ? null : g.first().toString());
      j.put("last", g.last() == null ? null : g.last().toString());
      gs.add(j);
    }
    m.put("groups", gs);
    m.put("deadLetters", deadLetters.stream().map(d -> deadLetterJson(d, false, false)).toList());
    return m;
  }

  static Map<String, Object> deadLetterJson(DeadLetter d, boolean withPayload, boolean redact) {
    Map<String, Object> j = new LinkedHashMap<>();
    j.put("id", d.id());
    j.put("group", DeadLetterGroup.idOf(d));
    j.put("destination", d.destination());
    j.put("broker", d.broker());
    j.put("source", d.source());
    j.put("deadLetteredAt", d.deadLetteredAt() == null ? null : d.deadLetteredAt().toString());
    j.put("replayCount", d.replayCount());
    DeadLetterReason r = d.reason();
    if (r == null) {
      j.put("reason", null);
    } else {
      Map<String, Object> reason = new LinkedHashMap<>();
      reason.put("cause", r.cause().name());
      reason.put("detail", r.detail());
      reason.put("consumerGroup", r.consumerGroup());
      reason.put("key", r.key());
      reason.put("attempt", r.attempt());
      reason.put("exceptionClass", r.exceptionClass());
      j.put("reason", reason);
    }
    if (withPayload) {
      Map<String, String> headers = new LinkedHashMap<>();
      d.headers().forEach((k, v) -> headers.put(k, redact && !isIdems(k) ? "<redacted>" : v));
      j.put("headers", headers);
      byte[] payload = d.payload();
      j.put("payloadBytes", payload.length);
      j.put("payloadSha256", sha256(payload));
      if (!redact) {
        String text = Utf8.decodeStrict(payload);
        j.put(text != null ? "payload" : "payloadBase64", text != null ? text : Base64.getEncoder().encodeToString(payload));
      }
    }
    return j;
  }

  /** One dead letter, as {@code show} prints it. */
  static void show(PrintWriter out, DeadLetter d, boolean redact, List<DeadLetterActions.Action> history) {
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"id", d.id()});
    rows.add(new String[] {"group", DeadLetterGroup.idOf(d)});
    rows.add(new String[] {"destination", d.destination() + " (" + d.broker() + ")"});
    rows.add(new String[] {"source", or(d.source())});
    rows.add(new String[] {"dead-lettered", time(d.deadLetteredAt())});
    rows.add(new String[] {"replays", Integer.toString(d.replayCount())});
    DeadLetterReason r = d.reason();
    if (r == null) {
      rows.add(new String[] {"reason", "none: not dead-lettered by Idem (no " + DeadLetterReason.HEADER_CAUSE
          + " header; the broker moved it itself)"});
    } else {
      rows.add(new String[] {"cause", r.cause().name()});
      rows.add(new String[] {"detail", r.detail()});
      rows.add(new String[] {"consumer group", r.consumerGroup()});
      rows.add(new String[] {"key", or(r.key())});
      rows.add(new String[] {"attempt", Integer.toString(r.attempt())});
      rows.add(new String[] {"exception", or(r.exceptionClass())});
    }
    table(out, rows, false);
    out.println("headers:");
    d.headers().forEach((k, v) -> out.println("  " + k + ": " + (redact && !isIdems(k) ? "<redacted>" : v)));
    byte[] payload = d.payload();
    if (redact) {
      out.println("payload: <redacted: " + payload.length + " bytes, sha256 " + sha256(payload) + ">");
    } else {
      String text = Utf8.decodeStrict(payload);
      out.println("payload (" + payload.length + " bytes" + (text == null ? ", not UTF-8: base64" : "") + "):");
      out.println("  " + (text != null ? text : Base64.getEncoder().encodeToString(payload)));
    }
    if (d.headers().containsKey(DeadLetterHeaders.DROPPED_ATTRIBUTES)) {
      out.println("note: SQS left out attributes " + d.headers().get(DeadLetterHeaders.DROPPED_ATTRIBUTES)
          + " when it was dead-lettered; a replay cannot restore them");
    }
    for (DeadLetterActions.Action a : history) {
      out.println("history: " + time(a.actedAt()) + " " + a.kind() + " by " + a.operator()
          + (a.target() != null ? " to " + a.target() : "") + (a.reason() != null ? ": " + a.reason() : ""));
    }
  }

  /** One result line of a replay or discard, as it happens. */
  static void result(PrintWriter out, ActionResult r) {
    out.println(String.format("%-13s %s  %s", r.outcome(), r.deadLetterId(),
        (r.key() != null ? "key " + r.key() + ": " : "") + r.detail()));
    out.flush();
  }

  /** The closing line of a replay or discard. */
  static void summary(PrintWriter out, ActionReport report) {
    List<String> parts = new ArrayList<>();
    for (ActionResult.Outcome o : ActionResult.Outcome.values()) {
      long n = report.count(o);
      if (n > 0) {
        parts.add(o.name().toLowerCase(java.util.Locale.ROOT).replace('_', ' ') + " " + n);
      }
    }
    out.println(report.action() + (report.dryRun() ? " (dry run)" : "") + " of " + report.destination() + ", selection "
        + report.selection() + ": " + (parts.isEmpty() ? "nothing matched" : String.join(", ", parts)));
  }

  static Map<String, Object> reportJson(ActionReport report) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("action", report.action());
    m.put("destination", report.destination());
    m.put("selection", report.selection());
    m.put("dryRun", report.dryRun());
    Map<String, Long> counts = new LinkedHashMap<>();
    for (ActionResult.Outcome o : ActionResult.Outcome.values()) {
      counts.put(o.name(), report.count(o));
    }
    m.put("counts", counts);
    List<Object> results = new ArrayList<>();
    for (ActionResult r : report.results()) {
      Map<String, Object> j = new LinkedHashMap<>();
      j.put("id", r.deadLetterId());
      j.put("consumerGroup", r.consumerGroup());
      j.put("key", r.key());
      j.put("outcome", r.outcome().name());
      j.put("target", r.target());
      j.put("detail", r.detail());
      results.add(j);
    }
    m.put("results", results);
    return m;
  }

  private static boolean isIdems(String header) {
    return header.startsWith("idem-") || header.startsWith("idem_");
  }

  private static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String or(@Nullable String value) {
    return value == null ? NONE : value;
  }

  private static String time(@Nullable Instant at) {
    return at == null ? NONE : at.truncatedTo(ChronoUnit.SECONDS).toString();
  }

  private static String shorten(String text, int max) {
    String oneLine = text.replace('\n', ' ');
    return oneLine.length() <= max ? oneLine : oneLine.substring(0, max - 1) + "…";
  }

  private static void table(PrintWriter out, List<String[]> rows) {
    table(out, rows, true);
  }

  private static void table(PrintWriter out, List<String[]> rows, boolean lastColumnPadded) {
    int columns = rows.get(0).length;
    int[] width = new int[columns];
    for (String[] row : rows) {
      for (int i = 0; i < columns; i++) {
        width[i] = Math.max(width[i], row[i].length());
      }
    }
    for (String[] row : rows) {
      StringBuilder line = new StringBuilder();
      for (int i = 0; i < columns; i++) {
        line.append(row[i]);
        if (i < columns - 1) {
          line.append(" ".repeat(width[i] - row[i].length() + 2));
        }
      }
      out.println(lastColumnPadded ? line.toString().stripTrailing() : line.toString());
    }
  }
}
