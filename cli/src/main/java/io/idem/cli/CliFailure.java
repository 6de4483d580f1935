package io.idem.cli;

/** A command that could not do what it was asked: one line on standard error, and its exit status. */
final class CliFailure extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final int exitCode;

  CliFailure(int exitCode, String message) {
    super(message);
    this.exitCode = exitCode;
  }

  int exitCode() {
    return exitCode;
  }
}
