-- 0001: accounts, keys, the ledger, reservations, budgets, usage, nonces, counters.
-- Times are Unix microseconds (UTC); money is micro-USD.

CREATE TABLE accounts (
	id       TEXT PRIMARY KEY,
	name     TEXT NOT NULL DEFAULT '',
	tier     TEXT NOT NULL,
	balance  INTEGER NOT NULL DEFAULT 0 CHECK (balance >= 0),
	held     INTEGER NOT NULL DEFAULT 0 CHECK (held >= 0 AND held <= balance),
	disabled INTEGER NOT NULL DEFAULT 0,
	created  INTEGER NOT NULL
) STRICT;

CREATE TABLE keys (
	id          TEXT PRIMARY KEY,
	account_id  TEXT NOT NULL REFERENCES accounts(id),
	name        TEXT NOT NULL DEFAULT '',
	hash        BLOB NOT NULL,
	read_only   INTEGER NOT NULL DEFAULT 0,
	spend_limit INTEGER NOT NULL DEFAULT 0,
	models      TEXT NOT NULL DEFAULT '',
	cidrs       TEXT NOT NULL DEFAULT '',
	expires     INTEGER NOT NULL DEFAULT 0,
	disabled    INTEGER NOT NULL DEFAULT 0,
	revoked     INTEGER NOT NULL DEFAULT 0,
	created     INTEGER NOT NULL
) STRICT;
CREATE INDEX keys_account ON keys(account_id);

-- Append-only: no UPDATE or DELETE ever touches it (triggers below).
CREATE TABLE ledger (
	seq            INTEGER PRIMARY KEY AUTOINCREMENT,
	account_id     TEXT NOT NULL REFERENCES accounts(id),
	kind           TEXT NOT NULL,
	amount         INTEGER NOT NULL,
	held           INTEGER NOT NULL,
	reservation_id INTEGER NOT NULL DEFAULT 0,
	request_id     TEXT NOT NULL DEFAULT '',
	reason         TEXT NOT NULL DEFAULT '',
	at             INTEGER NOT NULL
) STRICT;
CREATE INDEX ledger_account ON ledger(account_id, seq);
CREATE INDEX ledger_reservation ON ledger(reservation_id) WHERE reservation_id != 0;
CREATE TRIGGER ledger_no_update BEFORE UPDATE ON ledger BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;
CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;

CREATE TABLE reservations (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	key_id     TEXT NOT NULL DEFAULT '',
	request_id TEXT NOT NULL UNIQUE,
	amount     INTEGER NOT NULL CHECK (amount >= 0),
	state      TEXT NOT NULL,
	charged    INTEGER NOT NULL DEFAULT 0,
	shortfall  INTEGER NOT NULL DEFAULT 0,
	created    INTEGER NOT NULL
) STRICT;
CREATE INDEX reservations_held ON reservations(created) WHERE state = 'held';

CREATE TABLE budgets (
	name  TEXT PRIMARY KEY,
	spent INTEGER NOT NULL DEFAULT 0,
	held  INTEGER NOT NULL DEFAULT 0 CHECK (held >= 0)
) STRICT;

CREATE TABLE reservation_budgets (
	reservation_id INTEGER NOT NULL REFERENCES reservations(id),
	name           TEXT NOT NULL,
	PRIMARY KEY (reservation_id, name)
) STRICT, WITHOUT ROWID;

CREATE TABLE usage (
	id                 INTEGER PRIMARY KEY AUTOINCREMENT,
	request_id         TEXT NOT NULL UNIQUE,
	account_id         TEXT NOT NULL,
	key_id             TEXT NOT NULL DEFAULT '',
	model              TEXT NOT NULL DEFAULT '',
	provider           TEXT NOT NULL DEFAULT '',
	input_tokens       INTEGER NOT NULL DEFAULT 0,
	output_tokens      INTEGER NOT NULL DEFAULT 0,
	cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
	cache_write_tokens INTEGER NOT NULL DEFAULT 0,
	cost               INTEGER NOT NULL DEFAULT 0,
	charge             INTEGER NOT NULL DEFAULT 0,
	savings            INTEGER NOT NULL DEFAULT 0,
	cache              TEXT NOT NULL DEFAULT '',
	latency_us         INTEGER NOT NULL DEFAULT 0,
	status             INTEGER NOT NULL DEFAULT 0,
	at                 INTEGER NOT NULL
) STRICT;
CREATE INDEX usage_account_at ON usage(account_id, at, id);
CREATE INDEX usage_key_at ON usage(key_id, at, id);

CREATE TABLE nonces (
	scope   TEXT NOT NULL,
	nonce   TEXT NOT NULL,
	expires INTEGER NOT NULL,
	PRIMARY KEY (scope, nonce)
) STRICT, WITHOUT ROWID;
CREATE INDEX nonces_expires ON nonces(expires);

CREATE TABLE counters (
	name   TEXT NOT NULL,
	start  INTEGER NOT NULL,
	value  INTEGER NOT NULL,
	PRIMARY KEY (name, start)
) STRICT, WITHOUT ROWID;
CREATE INDEX counters_start ON counters(start);
