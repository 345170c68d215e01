-- Runs unchanged on H2 (2.x, regular mode) and PostgreSQL 15.
-- API keys (docs/SECURITY.md): a key is "ls_<id>_<secret>"; only the SHA-256 of the whole key is kept,
-- found by its id and compared in constant time. A revoked key keeps its row, so its name is not reused.
CREATE TABLE api_keys (
    name           VARCHAR(64)  NOT NULL PRIMARY KEY,
    key_id         VARCHAR(16)  NOT NULL UNIQUE,
    key_hash       VARCHAR(64)  NOT NULL,
    role           VARCHAR(10)  NOT NULL CHECK (role IN ('operator', 'client')),
    max_in_flight  INTEGER      CHECK (max_in_flight > 0),
    created_at     TIMESTAMP WITH TIME ZONE NOT NULL,
    revoked_at     TIMESTAMP WITH TIME ZONE
);

-- Each purchase belongs to the client whose key made it; rows from before keys belong to no one ('').
ALTER TABLE purchases ADD COLUMN client_name VARCHAR(64) DEFAULT '' NOT NULL;
DROP INDEX purchases_by_key;
CREATE INDEX purchases_by_key ON purchases (client_name, idempotency_key);
-- Dropped once the purchase is terminal: nothing can be charged with it any more.
ALTER TABLE purchases ALTER COLUMN payment_token DROP NOT NULL;

-- An answer's identity is (client, key): the same key from two clients is two purchases. The table is
-- rebuilt with the new primary key (its name differs between the databases) and keeps what it held.
CREATE TABLE client_idempotency_keys (
    client_name   VARCHAR(64)    NOT NULL,
    idem_key      VARCHAR(255)   NOT NULL,
    request_hash  VARCHAR(64)    NOT NULL,
    state         VARCHAR(10)    NOT NULL CHECK (state IN ('IN_FLIGHT', 'DONE')),
    status        INTEGER,
    content_type  VARCHAR(100),
    location      VARCHAR(200),
    body          VARCHAR(200000),
    created_at    TIMESTAMP WITH TIME ZONE NOT NULL,
    completed_at  TIMESTAMP WITH TIME ZONE,
    claim_token   VARCHAR(36),
    PRIMARY KEY (client_name, idem_key)
);
INSERT INTO client_idempotency_keys (client_name, idem_key, request_hash, state, status, content_type, location, body,
                                     created_at, completed_at, claim_token)
SELECT '', idem_key, request_hash, state, status, content_type, location, body, created_at, completed_at, claim_token
FROM idempotency_keys;
DROP TABLE idempotency_keys;
ALTER TABLE client_idempotency_keys RENAME TO idempotency_keys;
-- Pruning after idempotency.retention walks the answered keys oldest first, a batch at a time.
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (state, completed_at);
