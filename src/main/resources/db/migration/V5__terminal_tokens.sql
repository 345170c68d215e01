-- Runs unchanged on H2 (2.x, regular mode) and PostgreSQL 15.
-- A payment token is dropped once its purchase is terminal (Purchases.move does it from now on): the rows
-- that ended before that rule clear theirs here. Nothing can be charged with a terminal purchase's token.
UPDATE purchases SET payment_token = NULL WHERE state IN ('CONFIRMED', 'RELEASED', 'EXPIRED', 'REFUNDED');
