package io.idem.benchmarks;

import org.apache.ibatis.annotations.Insert;

/** The application's mapper: one effect row per applied order. */
public interface EffectsMapper {
  @Insert("INSERT INTO effects (order_id) VALUES (#{orderId})")
  void apply(String orderId);
}
