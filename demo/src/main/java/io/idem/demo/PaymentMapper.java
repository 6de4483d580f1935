package io.idem.demo;

import org.apache.ibatis.annotations.Insert;
import org.apache.ibatis.annotations.Param;

/**
 * The demo's business write: an ordinary MyBatis mapper. Called through the handler's
 * {@code SqlSession}, it commits or rolls back together with Idem's processed-events marker.
 */
public interface PaymentMapper {

  @Insert("INSERT INTO demo_payments (order_id, amount_cents) VALUES (#{orderId}, #{amountCents})")
  int insertPayment(@Param("orderId") String orderId, @Param("amountCents") long amountCents);
}
