-- Runs unchanged on H2 (2.x, regular mode) and PostgreSQL 15.
-- Reconciliation of PAYMENT_UNKNOWN purchases: when the payment went unknown, when to ask the
-- provider next (also the lease a worker takes by moving it forward), and how often it was asked.
ALTER TABLE purchases ADD COLUMN unknown_since TIMESTAMP WITH TIME ZONE;
ALTER TABLE purchases ADD COLUMN next_check_at TIMESTAMP WITH TIME ZONE;
ALTER TABLE purchases ADD COLUMN check_attempts INTEGER DEFAULT 0 NOT NULL;
CREATE INDEX purchases_to_check ON purchases (state, next_check_at);
CREATE INDEX purchases_by_key ON purchases (idempotency_key);
