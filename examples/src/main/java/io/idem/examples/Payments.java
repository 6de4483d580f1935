package io.idem.examples;

import org.apache.ibatis.annotations.Insert;
import org.apache.ibatis.annotations.Update;

/** The application's own MyBatis mapper: the business write the pipeline makes idempotent. */
public interface Payments {

  /** Charges an order once; there is no unique constraint, the processed-events marker dedups. */
  @Insert("INSERT INTO payments (order_id) VALUES (#{orderId})")
  void charge(String orderId);

  /** The application's table, created here so that the examples run on an empty database. */
  @Update("CREATE TABLE IF NOT EXISTS payments ("
      + " order_id text NOT NULL, charged_at timestamptz NOT NULL DEFAULT now())")
  void createTableIfMissing();
}
