package io.idem.demo;

import org.apache.ibatis.annotations.Insert;
import org.apache.ibatis.annotations.Param;

/**
 * The downstream consumer's write: one receipt per order, applied from the receipts the relay
 * published. Called through the receipts pipeline's {@code SqlSession}, it commits with that
 * pipeline's processed-events marker (its own consumer group).
 */
public interface ReceiptMapper {

  @Insert("INSERT INTO demo_receipts (order_id, amount_cents) VALUES (#{orderId}, #{amountCents})")
  int insertReceipt(@Param("orderId") String orderId, @Param("amountCents") long amountCents);
}
