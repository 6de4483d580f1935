package io.idem.it;

import io.idem.demo.DemoMain;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** Runs the demo's command line in this JVM and keeps what it printed (also echoed to stdout). */
record DemoOutput(int exitCode, String text) {

  static DemoOutput run(String... args) {
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    PrintStream out = new PrintStream(new OutputStream() {
      @Override
      public void write(int b) {
        buffer.write(b);
        System.out.write(b);
      }

      @Override
      public void write(byte[] b, int off, int len) {
        buffer.write(b, off, len);
        System.out.write(b, off, len);
      }
    }, true, StandardCharsets.UTF_8);
    int exitCode = DemoMain.commandLine(new DemoMain(out)).execute(args);
    out.flush();
    return new DemoOutput(exitCode, buffer.toString(StandardCharsets.UTF_8));
  }

  List<String> lines() {
    return text.lines().toList();
  }
}
