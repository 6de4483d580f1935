CREATE TABLE orders (id text PRIMARY KEY, amount_cents bigint NOT NULL);
CREATE TABLE payments (id text PRIMARY KEY, order_id text NOT NULL, amount_cents bigint NOT NULL);
CREATE TABLE balances (order_id text PRIMARY KEY, paid_cents bigint NOT NULL);
