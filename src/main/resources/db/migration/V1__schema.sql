-- Runs unchanged on H2 (2.x, regular mode) and PostgreSQL 15.
-- Timestamps are TIMESTAMP WITH TIME ZONE; money is DECIMAL(12,2).

CREATE TABLE events (
    id          VARCHAR(64)    NOT NULL PRIMARY KEY,
    name        VARCHAR(200)   NOT NULL,
    capacity    INTEGER        NOT NULL CHECK (capacity > 0),
    price       DECIMAL(12, 2) NOT NULL CHECK (price >= 0),
    currency    CHAR(3)        NOT NULL,
    created_at  TIMESTAMP WITH TIME ZONE NOT NULL
);

-- One row per seat. The seat's state is the only truth about who may have it:
-- a seat is claimed by a conditional UPDATE ... WHERE state = 'AVAILABLE'.
CREATE TABLE seats (
    event_id    VARCHAR(64)  NOT NULL REFERENCES events (id),
    label       VARCHAR(16)  NOT NULL,
    position    INTEGER      NOT NULL,
    state       VARCHAR(10)  NOT NULL CHECK (state IN ('AVAILABLE', 'HELD', 'SOLD')),
    purchase_id VARCHAR(36),
    PRIMARY KEY (event_id, label),
    CONSTRAINT seat_owner_matches_state CHECK ((state = 'AVAILABLE' AND purchase_id IS NULL)
                                            OR (state <> 'AVAILABLE' AND purchase_id IS NOT NULL))
);
CREATE INDEX seats_by_state ON seats (event_id, state, position);
CREATE INDEX seats_by_purchase ON seats (purchase_id);

CREATE TABLE purchases (
    id               VARCHAR(36)    NOT NULL PRIMARY KEY,
    event_id         VARCHAR(64)    NOT NULL REFERENCES events (id),
    state            VARCHAR(20)    NOT NULL CHECK (state IN ('HELD', 'PAYING', 'PAYMENT_UNKNOWN',
                                                              'CONFIRMED', 'RELEASED', 'EXPIRED', 'REFUNDED')),
    idempotency_key  VARCHAR(255)   NOT NULL,
    buyer_id         VARCHAR(100)   NOT NULL,
    buyer_email      VARCHAR(254)   NOT NULL,
    payment_token    VARCHAR(100)   NOT NULL,
    seat_count       INTEGER        NOT NULL,
    amount           DECIMAL(12, 2) NOT NULL,
    tax              DECIMAL(12, 2),
    currency         CHAR(3)        NOT NULL,
    payment_id       VARCHAR(100),
    reason           VARCHAR(300),
    hold_expires_at  TIMESTAMP WITH TIME ZONE NOT NULL,
    created_at       TIMESTAMP WITH TIME ZONE NOT NULL,
    updated_at       TIMESTAMP WITH TIME ZONE NOT NULL
);
CREATE INDEX purchases_by_state ON purchases (state, hold_expires_at);

CREATE TABLE purchase_seats (
    purchase_id VARCHAR(36) NOT NULL REFERENCES purchases (id),
    event_id    VARCHAR(64) NOT NULL,
    label       VARCHAR(16) NOT NULL,
    PRIMARY KEY (purchase_id, label)
);

-- I1 in the schema: a second ticket for one seat cannot be written.
CREATE TABLE tickets (
    id          VARCHAR(36) NOT NULL PRIMARY KEY,
    purchase_id VARCHAR(36) NOT NULL REFERENCES purchases (id),
    event_id    VARCHAR(64) NOT NULL,
    label       VARCHAR(16) NOT NULL,
    issued_at   TIMESTAMP WITH TIME ZONE NOT NULL,
    CONSTRAINT one_ticket_per_seat UNIQUE (event_id, label)
);

CREATE TABLE purchase_steps (
    purchase_id VARCHAR(36)  NOT NULL REFERENCES purchases (id),
    seq         INTEGER      NOT NULL,
    step        VARCHAR(20)  NOT NULL,
    started_at  TIMESTAMP WITH TIME ZONE NOT NULL,
    ended_at    TIMESTAMP WITH TIME ZONE,
    outcome     VARCHAR(200),
    PRIMARY KEY (purchase_id, seq)
);

CREATE TABLE idempotency_keys (
    idem_key      VARCHAR(255)   NOT NULL PRIMARY KEY,
    request_hash  VARCHAR(64)    NOT NULL,
    state         VARCHAR(10)    NOT NULL CHECK (state IN ('IN_FLIGHT', 'DONE')),
    status        INTEGER,
    content_type  VARCHAR(100),
    location      VARCHAR(200),
    body          VARCHAR(200000),
    created_at    TIMESTAMP WITH TIME ZONE NOT NULL,
    completed_at  TIMESTAMP WITH TIME ZONE
);

-- Written in the confirm transaction; delivered by a worker (at least once, deduplicated by key).
CREATE TABLE outbox (
    id               VARCHAR(36)   NOT NULL PRIMARY KEY,
    dedupe_key       VARCHAR(100)  NOT NULL UNIQUE,
    kind             VARCHAR(30)   NOT NULL,
    purchase_id      VARCHAR(36)   NOT NULL,
    payload          VARCHAR(20000) NOT NULL,
    state            VARCHAR(10)   NOT NULL CHECK (state IN ('PENDING', 'SENT', 'DEAD')),
    attempts         INTEGER       NOT NULL,
    next_attempt_at  TIMESTAMP WITH TIME ZONE NOT NULL,
    created_at       TIMESTAMP WITH TIME ZONE NOT NULL,
    sent_at          TIMESTAMP WITH TIME ZONE,
    last_error       VARCHAR(500)
);
CREATE INDEX outbox_due ON outbox (state, next_attempt_at);
