CREATE TABLE orders (id text PRIMARY KEY, amount bigint NOT NULL);
