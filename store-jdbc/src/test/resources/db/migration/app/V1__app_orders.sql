-- An application's own first migration, beside Idem's V1 (FlywayBesideTheApplicationsMigrationsIT).
CREATE TABLE app_orders (id bigint PRIMARY KEY);
