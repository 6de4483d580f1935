package io.idem.benchmarks;

/** MariaDB's settings that decide a commit's cost, for the record ({@code --databases mariadb}). */
final class MariaDbSettings {
  private MariaDbSettings() {}

  static String describe(String url, String user, String password) {
    return Postgres.serverSettings(url, user, password, "SELECT @@%s", "version", "innodb_flush_log_at_trx_commit",
        "sync_binlog", "log_bin", "innodb_flush_method", "innodb_doublewrite", "innodb_buffer_pool_size",
        "tx_isolation");
  }
}
